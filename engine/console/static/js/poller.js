// Live updates by polling: a tick, then the next one after interval() ms (2 s while
// something runs, 15 s otherwise, the caller decides), none while the tab is hidden
// and one at once when it shows again. Never two ticks at the same time.

export const FAST_MS = 2000;
export const SLOW_MS = 15000;

export class Poller {
  /**
   * @param {() => Promise<void>} tick
   * @param {() => number} interval the pause before the next tick, in ms
   */
  constructor(tick, interval) {
    this._tick = tick;
    this._interval = interval;
    this._timer = null;
    this._running = false;
    this._again = false;
    this._stopped = true;
    this._onVisibility = () => {
      if (document.hidden) this._clear();
      else this.now();
    };
  }

  start() {
    this._stopped = false;
    document.addEventListener("visibilitychange", this._onVisibility);
    return this.now();
  }

  stop() {
    this._stopped = true;
    this._clear();
    document.removeEventListener("visibilitychange", this._onVisibility);
  }

  /** Tick now (after the running tick, if one runs), then go on at the interval. */
  async now() {
    this._clear();
    if (this._stopped || document.hidden) return;
    if (this._running) {
      this._again = true;
      return;
    }
    this._running = true;
    try {
      await this._tick();
    } catch (error) {
      // The tick shows its own errors; a bug must not stop the polling.
      console.error(error);
    } finally {
      this._running = false;
    }
    if (this._again) {
      this._again = false;
      this.now();
      return;
    }
    this._schedule();
  }

  _schedule() {
    if (this._stopped || document.hidden) return;
    const ms = this._interval();
    // Shown on <main> for the curious and the browser tests.
    const main = document.getElementById("main");
    if (main) main.dataset.pollMs = String(ms);
    this._timer = window.setTimeout(() => this.now(), ms);
  }

  _clear() {
    if (this._timer !== null) window.clearTimeout(this._timer);
    this._timer = null;
  }
}
