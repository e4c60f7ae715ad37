// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');

// Some ESM-only dependencies of @grafana/* (d3-color >= 3.1.1) ship `.mjs` entry points,
// which the scaffolded transform pattern does not match; compile them with the same SWC setup.
const swcTransform = base.transform['^.+\\.(t|j)sx?$'];

module.exports = {
  // Jest configuration provided by Grafana scaffolding
  ...base,
  // Interactive tests re-render whole editors per keystroke; shared 2-core CI machines need room.
  testTimeout: 30_000,
  transform: {
    ...base.transform,
    '^.+\\.mjs$': swcTransform,
  },
};
