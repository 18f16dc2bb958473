'use strict';
/*
 * cdp.js - headless Chromium driven over the DevTools protocol through a pipe
 * (--remote-debugging-pipe: NUL-terminated JSON messages, the browser reads fd 3 and writes
 * fd 4), so the test needs no npm package and no WebSocket. Chromium's CDP domains used here:
 * Target (createTarget, attachToTarget flat sessions), Page, Runtime, DOM, Emulation.
 */
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

/* A clean, quiet headless browser: no sandbox (containers), no GPU, no network of its own. */
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-default-apps', '--disable-extensions', '--mute-audio', '--hide-scrollbars',
  '--remote-debugging-pipe',
];

class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
    this.errors = [];   /* uncaught exceptions, console.error, browser log errors (CSP, loads) */
    this.console = [];  /* every console message */
    this.listeners = {};
  }
  on(method, fn) { (this.listeners[method] = this.listeners[method] || []).push(fn); }
  send(method, params) { return this.browser.send(method, params || {}, this.sessionId); }
  waitFor(method, timeoutMs) { return this.browser.waitFor(method, this.sessionId, timeoutMs); }

  async navigate(url, timeoutMs) {
    const loaded = this.waitFor('Page.loadEventFired', timeoutMs || 15000);
    const r = await this.send('Page.navigate', { url });
    if (r.errorText) throw new Error(`navigate ${url}: ${r.errorText}`);
    await loaded;
  }

  /* The value of expr (awaited when it is a promise); a page exception becomes an error here. */
  async evaluate(expr) {
    const r = await this.send('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) {
      const d = r.exceptionDetails;
      throw new Error(`page: ${(d.exception && d.exception.description) || d.text}`);
    }
    return r.result.value;
  }

  /* Give the <input type=file> that selector names these files, as a user picking them would. */
  async setFiles(selector, files) {
    const doc = await this.send('DOM.getDocument', { depth: 0 });
    const q = await this.send('DOM.querySelector', { nodeId: doc.root.nodeId, selector });
    if (!q.nodeId) throw new Error(`no element ${selector}`);
    await this.send('DOM.setFileInputFiles', { nodeId: q.nodeId, files: files.map((f) => path.resolve(f)) });
  }

  /* A PNG of the whole page at width px (or of clip {x, y, width, height} of it). */
  async screenshot(file, width, clip) {
    await this.send('Emulation.setDeviceMetricsOverride', { width, height: 800, deviceScaleFactor: 1, mobile: false });
    const m = await this.send('Page.getLayoutMetrics');
    const h = Math.ceil((m.cssContentSize || m.contentSize).height);
    await this.send('Emulation.setDeviceMetricsOverride', { width, height: h, deviceScaleFactor: 1, mobile: false });
    const params = { format: 'png', captureBeyondViewport: true };
    if (clip) params.clip = Object.assign({ scale: 1 }, clip);
    const shot = await this.send('Page.captureScreenshot', params);
    fs.writeFileSync(file, Buffer.from(shot.data, 'base64'));
    return { width, height: h };
  }
}

class Browser {
  static async launch(executable, extraFlags) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'memledger-chromium-'));
    const args = FLAGS.concat([`--user-data-dir=${profile}`], extraFlags || [], ['about:blank']);
    const proc = spawn(executable, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    const b = new Browser(proc, profile);
    await b.send('Target.setDiscoverTargets', { discover: true });
    return b;
  }

  constructor(proc, profile) {
    this.proc = proc;
    this.profile = profile;
    this.nextId = 1;
    this.pending = new Map();
    this.waiters = [];
    this.pages = new Map();
    this.stderr = '';
    this.exited = false;
    let buf = Buffer.alloc(0);
    proc.stdio[4].on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let nul;
      while ((nul = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, nul).toString('utf8'));
        buf = buf.subarray(nul + 1);
        this.dispatch(msg);
      }
    });
    proc.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    proc.on('exit', (code) => {
      this.exited = true;
      for (const [, p] of this.pending) p.reject(new Error(`chromium exited (${code}): ${this.stderr.slice(-500)}`));
      this.pending.clear();
    });
  }

  dispatch(msg) {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
      return;
    }
    const page = msg.sessionId && this.pages.get(msg.sessionId);
    if (page && msg.method === 'Runtime.exceptionThrown') {
      const d = msg.params.exceptionDetails;
      page.errors.push((d.exception && d.exception.description) || d.text);
    }
    if (page && msg.method === 'Runtime.consoleAPICalled') {
      const text = msg.params.args.map((a) => (a.value !== undefined ? String(a.value) : a.description || '')).join(' ');
      page.console.push(`${msg.params.type}: ${text}`);
      if (msg.params.type === 'error') page.errors.push(text);
    }
    if (page && msg.method === 'Log.entryAdded' && msg.params.entry.level === 'error') {
      page.errors.push(`${msg.params.entry.source}: ${msg.params.entry.text} ${msg.params.entry.url || ''}`.trim());
    }
    if (page && page.listeners[msg.method]) page.listeners[msg.method].forEach((fn) => fn(msg.params));
    this.waiters = this.waiters.filter((w) => {
      if (w.method !== msg.method || (w.sessionId && w.sessionId !== msg.sessionId)) return true;
      clearTimeout(w.timer);
      w.resolve(msg.params);
      return false;
    });
  }

  send(method, params, sessionId) {
    if (this.exited) return Promise.reject(new Error('chromium is not running'));
    const id = this.nextId++;
    const msg = { id, method, params: params || {} };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.proc.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }

  waitFor(method, sessionId, timeoutMs) {
    return new Promise((resolve, reject) => {
      const w = { method, sessionId, resolve };
      w.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out waiting for ${method}`));
      }, timeoutMs || 15000);
      this.waiters.push(w);
    });
  }

  async newPage() {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId);
    this.pages.set(sessionId, page);
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    await page.send('Log.enable');
    await page.send('Network.enable');
    return page;
  }

  async close() {
    try {
      if (!this.exited) await Promise.race([this.send('Browser.close'), new Promise((r) => setTimeout(r, 3000))]);
    } catch (e) { /* already gone */ }
    if (!this.exited) this.proc.kill('SIGKILL');
    await new Promise((r) => (this.exited ? r() : this.proc.once('exit', r)));
    try {
      fs.rmSync(this.profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    } catch (e) { /* a profile left in the temp directory is harmless */ }
  }
}

module.exports = { Browser, FLAGS };
