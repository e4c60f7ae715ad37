// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';

// jsdom has no canvas. @grafana/ui's Combobox sizes its menu with
// CanvasRenderingContext2D.measureText; give it a fixed-width font.
HTMLCanvasElement.prototype.getContext = function getContext() {
  return {
    font: '',
    measureText: (text) => ({ width: String(text).length * 8 }),
  };
};

// jsdom has no IntersectionObserver; @grafana/ui's Select menu observes its own visibility.
class IntersectionObserverStub {
  constructor(callback) {
    this.callback = callback;
  }
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}
Object.assign(global, { IntersectionObserver: IntersectionObserverStub });

// jsdom lays nothing out, so every element measures 0×0 and @grafana/ui's virtualised
// Combobox menu (@tanstack/virtual reads client and offset sizes) would render no option.
// Give elements a nominal size.
Object.defineProperties(HTMLElement.prototype, {
  offsetHeight: { configurable: true, get: () => 320 },
  offsetWidth: { configurable: true, get: () => 320 },
  clientHeight: { configurable: true, get: () => 320 },
  clientWidth: { configurable: true, get: () => 320 },
});

// i18next (initialised by @grafana/i18n) prints a sponsor notice once per test file; it is not
// ours and buries the output that is. Everything else still reaches the console.
const consoleInfo = console.info.bind(console);
console.info = (...args) => {
  if (typeof args[0] === 'string' && args[0].includes('i18next is made possible')) {
    return;
  }
  consoleInfo(...args);
};
