import CopyWebpackPlugin from 'copy-webpack-plugin';
import type { Configuration } from 'webpack';
import { merge } from 'webpack-merge';

import grafanaConfig, { type Env } from './.config/webpack/webpack.config.ts';

// The scaffolded config copies only the app's own logos; the nested data source
// (src/datasource) needs its img/ folder next to its plugin.json as well, and the app's included
// dashboards come from the top-level dashboards/ folder, their one source.
const config = async (env: Env): Promise<Configuration> => {
  const baseConfig = await grafanaConfig(env);
  return merge(baseConfig, {
    plugins: [
      new CopyWebpackPlugin({
        patterns: [
          { from: 'datasource/img', to: 'datasource/img' },
          { from: '../dashboards', to: 'dashboards', globOptions: { ignore: ['**/README.md'] } },
        ],
      }),
    ],
  });
};

export default config;
