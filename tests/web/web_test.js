'use strict';
/*
 * web_test.js - the page in a real browser against the CLI on the same files (make web-test).
 *
 *   node tests/web/web_test.js --dist web/dist --cli build/memledger --seed examples/seed-case --out DIR
 *
 * 1. Loads web/dist/index.html#seed from a static server on 127.0.0.1 several times and reads
 *    when the answer was on the page (performance.now(), from navigation start): the median is
 *    reported against --budget-ms (200). Timing is a measurement, not a pass/fail check, on a
 *    machine whose load this test does not control: it fails on it only with --strict-timing 1.
 * 2. Feeds the seed case the way a user does (file pickers; GPU "dcu-16g", 4 per node) and checks
 *    that the command line the page shows is what it ran, and that the verdict, the peak phase
 *    and every figure shown equal `memledger train --json` / `diagnose --json` / `fit --json` run
 *    with that command line in the seed directory: exact bytes (data-bytes at data-key) and the
 *    text (against the CLI's own text output); the reports shown are the CLI's text, byte for byte.
 * 3. Pastes a malformed YAML: the page's error is the CLI's one line for the same file.
 * 4. Opens the page from file:// (the offline case) and checks it answers there too.
 * 5. Opens it in a browser that prefers Chinese (--lang=zh-CN): the zh_CN text of strings.js.
 * 6. Saves a screenshot (DIR/page.png) and the timings (DIR/web-test.json).
 * Any page error (uncaught exception, console.error, a blocked request) fails the test.
 */
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Browser } = require('./cdp.js');
const { start } = require('./serve.js');

function args(argv) {
  const o = { dist: 'web/dist', cli: 'build/memledger', seed: 'examples/seed-case', out: 'build-web/test',
    chromium: process.env.CHROMIUM || '/usr/bin/chromium', budgetMs: 200, strictTiming: 0, loads: 7 };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '').replace(/-(\w)/g, (m, c) => c.toUpperCase());
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return o;
}

const failures = [];
let checks = 0;
function check(cond, what) {
  checks++;
  if (!cond) failures.push(what.length > 400 ? what.slice(0, 400) + '…' : what);
}
const short = (list) => list.map((e) => (e.length > 200 ? e.slice(0, 200) + '…' : e)).join(' | ');
function eq(got, want, what) {
  check(got === want, `${what}: page ${JSON.stringify(got)}, CLI ${JSON.stringify(want)}`);
}

/* The CLI with the page's argv, in dir; stdout, stderr and status. */
function cli(o, cmd, argv, dir) {
  const r = spawnSync(path.resolve(o.cli), [cmd].concat(argv), { cwd: dir, encoding: 'utf8', env: Object.assign({}, process.env, { LC_ALL: 'C', LANGUAGE: '' }) });
  return { out: r.stdout, err: r.stderr, status: r.status };
}
function cliJson(o, cmd, argv, dir) {
  const r = cli(o, cmd, argv.concat(['--json']), dir);
  if (!r.out) throw new Error(`memledger ${cmd} ${argv.join(' ')} --json: ${r.err}`);
  return JSON.parse(r.out);
}

/* The value at a dotted path ("per_gpu.components.3.bytes"). */
function at(obj, key) {
  return key.split('.').reduce((v, k) => (v === undefined || v === null ? undefined : v[k]), obj);
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

async function until(page, expr, timeoutMs) {
  const end = Date.now() + (timeoutMs || 10000);
  for (;;) {
    const v = await page.evaluate(expr);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${expr}`);
    await sleep(10);
  }
}

/* Wait for an answer newer than `since` (body[data-answered] is performance.now() at the answer). */
async function answered(page, since) {
  return Number(await until(page, `(function(){var a=document.body.getAttribute('data-answered');` +
    `return a && Number(a) > ${since || 0} ? a : null;})()`));
}

/* Everything the page shows that the test compares. */
const READ_PAGE = `(function () {
  function txt(id) { var e = document.getElementById(id); return e ? e.textContent : null; }
  function figs(sel) {
    return Array.prototype.map.call(document.querySelectorAll(sel + ' .fig'), function (e) {
      return { key: e.getAttribute('data-key'), bytes: e.getAttribute('data-bytes'), text: e.textContent };
    });
  }
  function cells(sel, col) {
    return Array.prototype.map.call(document.querySelectorAll(sel + ' tbody tr'), function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent; });
    });
  }
  var svg = document.querySelector('#picture svg');
  return {
    error: txt('error-text'), errorShown: !document.getElementById('error').hidden,
    command: txt('command'),
    verdict: document.getElementById('verdict-word').getAttribute('data-verdict'),
    verdictText: txt('verdict-word'), peakPhase: txt('peak-phase'),
    result: figs('#result'), fit: figs('#fit'),
    ledger: cells('#ledger-table'), phases: cells('#phase-table'), peak: cells('#peak-table'),
    notes: Array.prototype.map.call(document.querySelectorAll('#notes li'), function (e) { return e.textContent; }),
    report: txt('report'), diagnose: txt('diagnose-report'),
    plans: Array.prototype.map.call(document.querySelectorAll('#plans > li'), function (e) {
      return e.querySelector('strong') ? e.querySelector('strong').textContent : e.textContent;
    }),
    svg: svg ? { peak: !!svg.querySelector('#bar-' + (document.getElementById('peak-phase') || {}).textContent + ' #peak'),
                 bars: svg.querySelectorAll('g[id^="bar-"]').length, width: svg.getAttribute('width') } : null,
    diagnoseSvg: !!document.querySelector('#diagnose-picture svg #log-bar'),
  };
})()`;

/* GiB strings of the CLI's text output: component rows, the peak block, the per-phase line. */
function cliText(text) {
  const comps = [];
  const lines = text.split('\n');
  let inTable = false;
  for (const l of lines) {
    if (/^component\s+rule/.test(l)) { inTable = true; continue; }
    if (inTable && /^-+$/.test(l)) continue;
    if (inTable && l.trim() === '') { inTable = false; continue; }
    if (inTable) {
      const m = /^(\S+)\s.*?\s(\d+\.\d\d GiB)\s{2}/.exec(l);
      if (m) comps.push({ id: m[1], gib: m[2] });
    }
  }
  const peak = {};
  for (const l of lines) {
    const m = /^\s+(allocated|reserved|device|capacity|headroom)\s+(\d+\.\d\d GiB)/.exec(l);
    if (m) peak[m[1]] = m[2];
  }
  const phases = {};
  const pl = lines.find((l) => l.startsWith('per phase'));
  if (pl) {
    for (const m of pl.matchAll(/(\w+) (\d+\.\d\d GiB)\/(\d+\.\d\d GiB)/g)) phases[m[1]] = [m[2], m[3]];
  }
  return { comps, peak, phases };
}

function checkLedger(page, json, text, label) {
  eq(page.verdict, json.per_gpu.verdict, `${label} verdict`);
  eq(page.peakPhase, json.per_gpu.peak_phase, `${label} peak phase`);
  check(page.result.length > 20, `${label}: only ${page.result.length} figures shown`);
  for (const f of page.result) {
    const want = at(json, f.key);
    check(want !== undefined, `${label}: figure ${f.key} is not in the CLI's JSON`);
    eq(f.bytes, String(want), `${label} ${f.key} bytes`);
  }
  /* Text against the CLI's text output. */
  const t = cliText(text);
  eq(page.ledger.length, t.comps.length, `${label} component rows`);
  page.ledger.forEach((r, i) => {
    if (!t.comps[i]) return;
    eq(r[0], t.comps[i].id, `${label} component ${i}`);
    eq(r[2], t.comps[i].gib, `${label} ${r[0]} GiB`);
    eq(r[1], json.per_gpu.components[i].rule, `${label} ${r[0]} rule`);
  });
  const names = { allocated: 0, reserved: 1, device: 2, capacity: 3 };
  for (const k of Object.keys(names)) eq(page.peak[names[k]][1], t.peak[k], `${label} peak ${k}`);
  eq(page.peak[4][1], t.peak.headroom || page.peak[4][1], `${label} headroom`);
  for (const r of page.phases) {
    const w = t.phases[r[0]];
    check(!!w, `${label}: phase ${r[0]} not in the CLI's per-phase line`);
    if (w) { eq(r[1], w[0], `${label} ${r[0]} allocated`); eq(r[2], w[1], `${label} ${r[0]} reserved`); }
  }
  eq(JSON.stringify(page.notes), JSON.stringify(json.notes), `${label} notes`);
  eq(page.report, text, `${label} text report`);
  check(page.svg && page.svg.peak, `${label}: the picture does not mark the peak phase`);
  check(page.svg && page.svg.bars === json.phases.length, `${label}: the picture has ${page.svg && page.svg.bars} bars`);
}

function checkFit(page, json, text, label) {
  eq(page.plans.length, json.plans.length || 1, `${label} plans`);
  json.plans.forEach((p, i) => eq(page.plans[i], p.summary, `${label} plan ${i + 1}`));
  for (const f of page.fit) eq(f.bytes, String(at(json, f.key)), `${label} ${f.key}`);
  /* "1. expandable segments — 14.31 GiB per GPU, headroom 1.68 GiB" */
  const lines = text.split('\n').filter((l) => /^\d+\. /.test(l));
  page.fit.forEach((f) => {
    const m = /^plans\.(\d+)\.(device_used|headroom)_bytes$/.exec(f.key);
    const l = m && lines[Number(m[1])];
    check(l && l.includes(m[2] === 'headroom' ? `headroom ${f.text}` : `${f.text} per GPU`),
      `${label} ${f.key}: page ${f.text} not in the CLI's "${l}"`);
  });
}

/* The argv of each command line the page shows ("memledger train --config ..."). */
function shownCommands(command) {
  return command.split('\n').filter(Boolean).map((l) => {
    const w = [];
    for (const m of l.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) w.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]);
    return w;
  });
}

async function timing(page, url, loads) {
  const runs = [];
  for (let i = 0; i < loads; i++) {
    await page.navigate(url + (i ? `?load=${i}` : '') + '#seed');
    const ans = await answered(page, 0);
    const nav = await page.evaluate(`(function(){var n=performance.getEntriesByType('navigation')[0];` +
      `return {load: n.loadEventEnd, dcl: n.domContentLoadedEventEnd};})()`);
    runs.push({ answered_ms: ans, load_event_ms: nav.load, after_load_ms: ans - nav.dcl });
  }
  const sorted = runs.map((r) => r.answered_ms).sort((a, b) => a - b);
  return { runs, median_ms: sorted[Math.floor(sorted.length / 2)], first_ms: runs[0].answered_ms };
}

/* The page in a browser whose preferred language is zh-CN: the lang attribute, every data-t
 * element and the verdict word come from the zh_CN table of strings.js, which has every key of
 * the en table (and no other); the answer is the same seed case (the verdict id). */
async function chinese(o, srv) {
  const zb = await Browser.launch(o.chromium, ['--lang=zh-CN', '--accept-lang=zh-CN']);
  try {
    const zp = await zb.newPage();
    await zp.navigate(srv.url + 'index.html#seed');
    await answered(zp, 0);
    const z = await zp.evaluate(`(function () {
      var zh = MEMLEDGER_STRINGS.zh_CN, en = MEMLEDGER_STRINGS.en, wrong = [];
      Array.prototype.forEach.call(document.querySelectorAll('[data-t]'), function (e) {
        var k = e.getAttribute('data-t');
        if (e.textContent !== zh[k]) wrong.push(k + ': ' + e.textContent);
      });
      var w = document.getElementById('verdict-word');
      var svg = document.querySelector('#picture svg');
      var plans = Array.prototype.map.call(document.querySelectorAll('#plans > li strong'), function (e) { return e.textContent; });
      return { languages: navigator.languages.join(','), lang: document.documentElement.lang, wrong: wrong,
               svgText: svg ? svg.textContent : '', plans: plans,
               missing: Object.keys(en).filter(function (k) { return !(k in zh); }),
               extra: Object.keys(zh).filter(function (k) { return !(k in en); }),
               verdict: w.getAttribute('data-verdict'), verdictText: w.textContent,
               verdictZh: zh['verdict_' + w.getAttribute('data-verdict').replace('does not fit', 'no_fit')] };
    })()`);
    check(z.lang === 'zh-CN', `zh-CN browser (${z.languages}): the page's lang is ${z.lang}`);
    check(z.wrong.length === 0, `zh-CN browser: elements not in the zh_CN text: ${z.wrong.slice(0, 5).join(' | ')}`);
    check(z.missing.length === 0 && z.extra.length === 0,
      `strings.js: zh_CN lacks ${z.missing.join(',')} and has extra ${z.extra.join(',')}`);
    check(z.verdictZh && z.verdictText === z.verdictZh, `zh-CN browser: the verdict reads ${z.verdictText}, not ${z.verdictZh}`);
    /* The module's own words are in zh_CN too (po/zh_CN.po compiled in): the picture's labels
     * and every plan's title. */
    const cjk = /[\u4e00-\u9fff]/;
    check(cjk.test(z.svgText), `zh-CN browser: the picture has no Chinese text: ${z.svgText.slice(0, 120)}`);
    check(z.plans.length > 0 && z.plans.every((p) => cjk.test(p)),
      `zh-CN browser: plan titles not in Chinese: ${z.plans.slice(0, 3).join(' | ')}`);
    check(zp.errors.length === 0, `zh-CN page errors: ${short(zp.errors)}`);
    return { languages: z.languages, lang: z.lang, verdict: z.verdictText, picture_zh: cjk.test(z.svgText),
             plans: z.plans.slice(0, 3) };
  } finally {
    await zb.close();
  }
}

async function main() {
  const o = args(process.argv);
  fs.mkdirSync(o.out, { recursive: true });
  const seed = path.resolve(o.seed);
  const srv = await start(o.dist);
  const browser = await Browser.launch(o.chromium);
  const report = { checks: 0 };
  try {
    const page = await browser.newPage();
    /* Nothing leaves the browser: every request goes to the page's own server (or data:/blob:). */
    const outside = [];
    const own = (u) => u.startsWith(srv.url) || /^(data|blob|file|about|chrome-error):/.test(u);
    page.on('Network.requestWillBeSent', (p) => { if (!own(p.request.url)) outside.push(p.request.url); });

    /* 1. How soon the seed case is answered. */
    report.timing = await timing(page, srv.url + 'index.html', o.loads);
    report.timing.budget_ms = o.budgetMs;
    report.timing.within_budget = report.timing.median_ms <= o.budgetMs;
    if (o.strictTiming)
      check(report.timing.within_budget,
        `the seed case is answered ${report.timing.median_ms.toFixed(1)} ms after navigation (median), budget ${o.budgetMs} ms`);

    /* 2. The seed case through the file pickers. */
    await page.navigate(srv.url + 'index.html');
    await until(page, `document.body.getAttribute('data-ready')`);
    await page.setFiles('#file-config', [path.join(seed, 'train.yaml')]);
    await page.setFiles('#file-deepspeed', [path.join(seed, 'deepspeed_z3_4x16g.json')]);
    await page.setFiles('#file-log', [path.join(seed, 'oom.log')]);
    await page.evaluate(`(function(){var g=document.getElementById('gpu');g.value='dcu-16g';g.dispatchEvent(new Event('input'));` +
      `var n=document.getElementById('num-gpus');n.value='4';n.dispatchEvent(new Event('input'));})()`);
    await until(page, `document.getElementById('command').textContent.indexOf('--num-gpus 4') > 0 && ` +
      `document.getElementById('text-log').value.length > 0 && document.getElementById('text-deepspeed').value.length > 0`);
    await sleep(300);
    await answered(page, 0);
    const shown = await page.evaluate(READ_PAGE);
    check(!shown.errorShown, `the seed case shows an error: ${shown.error}`);
    /* The verdict is seen without scrolling on a 1280x800 screen. */
    await page.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    const fold = await page.evaluate(`(function () { window.scrollTo(0, 0);
      var r = document.getElementById('verdict').getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, height: r.height, inner: window.innerHeight }; })()`);
    check(fold.height > 0 && fold.top >= 0 && fold.bottom <= 800,
      `at 1280x800 the verdict is not in view without scrolling: ${fold.top}-${fold.bottom} px of ${fold.inner}`);
    report.verdict_in_view = fold;
    check(shown.verdictText && !/^verdict_/.test(shown.verdictText), `the verdict word is a missing string: ${shown.verdictText}`);
    const cmds = shownCommands(shown.command);
    const train = cmds.find((c) => c[1] === 'train');
    const diag = cmds.find((c) => c[1] === 'diagnose');
    check(train && diag, `the page shows no train and diagnose command lines: ${shown.command}`);
    eq(JSON.stringify(train.slice(2)), JSON.stringify(['--config', 'train.yaml', '--deepspeed', 'deepspeed_z3_4x16g.json',
      '--gpu', 'dcu-16g', '--num-gpus', '4']), 'the train command line');
    const tj = cliJson(o, 'train', train.slice(2), seed);
    const tt = cli(o, 'train', train.slice(2), seed).out;
    checkLedger(shown, tj, tt, 'train');
    const fitArgv = train.slice(2);
    const fj = cliJson(o, 'fit', fitArgv, seed);
    checkFit(shown, fj, cli(o, 'fit', fitArgv, seed).out, 'fit');
    const dt = cli(o, 'diagnose', diag.slice(2), seed);
    eq(shown.diagnose, dt.out, 'diagnose text report');
    check(shown.diagnoseSvg, 'no diagnose picture with the log bar');
    const dj = cliJson(o, 'diagnose', diag.slice(2), seed);
    const dfigs = await page.evaluate(`Array.prototype.map.call(document.querySelectorAll('#diagnose .fig'), function (e) {
      return { key: e.getAttribute('data-key'), bytes: e.getAttribute('data-bytes'), text: e.textContent }; })`);
    check(dfigs.length >= 7, `diagnose shows ${dfigs.length} figures`);
    for (const f of dfigs) {
      eq(f.bytes, String(at(dj, f.key)), `diagnose ${f.key}`);
      check(dt.out.includes(f.text), `diagnose ${f.key}: page ${f.text} is not in the CLI's text`);
    }
    /* Each plan's patched files: what `fit --write DIR --plan N` writes, byte for byte (only the
     * files the plan changes; the YAML's deepspeed: as found from the run directory); and a plan
     * written over its inputs is refused with the CLI's error line. */
    const wdir = fs.mkdtempSync(path.join(os.tmpdir(), 'memledger-fit-'));
    for (const f of ['train.yaml', 'deepspeed_z3_4x16g.json']) fs.copyFileSync(path.join(seed, f), path.join(wdir, f));
    const pageFit = (argv) => page.evaluate(`(function () {
      var f = {}; ['train.yaml', 'deepspeed_z3_4x16g.json'].forEach(function (n, i) {
        f[n] = document.getElementById(i ? 'text-deepspeed' : 'text-config').value; });
      return MemLedger.fit({argv: ${JSON.stringify(argv)}, files: f});
    })()`);
    let yamlPlan = 0; /* a plan that rewrites the YAML */
    for (let k = 1; k <= fj.plans.length; k++) {
      const out = `plan-${k}`, extra = ['--write', out, '--plan', String(k)];
      const written = cli(o, 'fit', fitArgv.concat(extra), wdir);
      check(written.status === 0, `memledger fit --write --plan ${k}: exit ${written.status} ${written.err}`);
      const pageFiles = (await pageFit(fitArgv.concat(extra))).files || [];
      const cliFiles = fs.readdirSync(path.join(wdir, out)).sort();
      if (!yamlPlan && cliFiles.includes('train.yaml')) yamlPlan = k;
      eq(JSON.stringify(pageFiles.map((f) => path.basename(f.name)).sort()), JSON.stringify(cliFiles), `fit --write --plan ${k} files`);
      for (const f of pageFiles) {
        const want = path.join(wdir, out, path.basename(f.name));
        eq(f.text, fs.existsSync(want) ? fs.readFileSync(want, 'utf8') : null, `fit --write --plan ${k} ${path.basename(f.name)}`);
      }
    }
    /* Without --deepspeed the YAML's deepspeed: is read, and the line naming the file comes
     * before the error: the page shows the error. */
    check(yamlPlan > 0, 'no plan of the seed case rewrites its YAML');
    const over = ['--write', '.', '--plan', String(yamlPlan), '--force'];
    const ds = fitArgv.indexOf('--deepspeed');
    const yamlArgv = fitArgv.filter((a, i) => i !== ds && i !== ds + 1);
    const refused = cli(o, 'fit', yamlArgv.concat(over), wdir);
    check(refused.err.trim().split('\n').length > 1, `fit --write . without --deepspeed: ${refused.err}`);
    const pageRefused = await pageFit(yamlArgv.concat(over));
    check(refused.status === 2 && !pageRefused.ok && pageRefused.exit === 2, `fit --write . --force: exit ${refused.status}, page ${pageRefused.exit}`);
    eq(pageRefused.error, refused.err.trim().split('\n').pop(), 'fit --write over an input: the error line');
    for (const f of ['train.yaml', 'deepspeed_z3_4x16g.json'])
      eq(fs.readFileSync(path.join(wdir, f), 'utf8'), fs.readFileSync(path.join(seed, f), 'utf8'), `fit --write . left ${f} as it was`);
    fs.rmSync(wdir, { recursive: true, force: true });

    report.seed = { verdict: shown.verdict, peak_phase: shown.peakPhase, figures: shown.result.length + shown.fit.length + dfigs.length,
      plans: shown.plans.length, diagnose_events: dj.events.length };
    report.screenshot = await page.screenshot(path.join(o.out, 'page.png'), 1100);

    /* 3. A malformed YAML: the CLI's one line. */
    const bad = 'model_name_or_path: Qwen/Qwen2.5-14B\nfinetuning_type: [lora\ncutoff_len: 1024\n';
    const since = Number(await page.evaluate(`document.body.getAttribute('data-answered')`));
    await page.evaluate(`(function(){var c=document.getElementById('text-config');c.value=${JSON.stringify(bad)};` +
      `c.dispatchEvent(new Event('input'));})()`);
    await answered(page, since);
    const badPage = await page.evaluate(READ_PAGE);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memledger-web-'));
    fs.writeFileSync(path.join(tmp, 'train.yaml'), bad);
    fs.copyFileSync(path.join(seed, 'deepspeed_z3_4x16g.json'), path.join(tmp, 'deepspeed_z3_4x16g.json'));
    const badCli = cli(o, 'train', train.slice(2), tmp);
    fs.rmSync(tmp, { recursive: true, force: true });
    check(badCli.status === 2, `the CLI exits ${badCli.status} on the malformed YAML`);
    const line = badCli.err.trim();
    check(line.split('\n').length === 1, `the CLI's error is not one line: ${line}`);
    check(badPage.errorShown, 'the page shows no error for the malformed YAML');
    eq(badPage.error.split('\n')[0], line, 'the malformed YAML error');
    report.malformed_yaml_error = line;

    /* 4. Offline: the same page from file://. */
    const fpage = await browser.newPage();
    await fpage.navigate('file://' + path.resolve(o.dist, 'index.html') + '#seed');
    await answered(fpage, 0);
    const off = await fpage.evaluate(READ_PAGE);
    eq(off.verdict, tj.per_gpu.verdict, 'file:// verdict');
    check(!off.errorShown, `file:// shows an error: ${off.error}`);
    check(fpage.errors.length === 0, `file:// page errors: ${short(fpage.errors)}`);
    check(page.errors.length === 0, `page errors: ${short(page.errors)}`);
    check(outside.length === 0, `requests outside the page: ${outside.join(' ')}`);

    /* 5. A browser that prefers Chinese gets the zh_CN table, every key of it. */
    report.zh_CN = await chinese(o, srv);
  } finally {
    await browser.close();
    await srv.close();
  }
  report.checks = checks;
  report.failures = failures;
  fs.writeFileSync(path.join(o.out, 'web-test.json'), JSON.stringify(report, null, 2) + '\n');
  const t = report.timing;
  console.log(`web-test: seed case answered ${t.median_ms.toFixed(1)} ms after navigation (median of ${t.runs.length}; ` +
    `first ${t.first_ms.toFixed(1)} ms); ${checks} checks; screenshot ${path.join(o.out, 'page.png')}`);
  if (!t.within_budget && !o.strictTiming)
    console.log(`web-test: note: over the ${t.budget_ms} ms target on this machine now (reported, not failed; ` +
      `make web-test WEB_STRICT_TIMING=1 fails on it)`);
  if (failures.length) {
    for (const f of failures) console.error(`web-test: FAIL ${f}`);
    process.exit(1);
  }
  console.log('web-test: passed');
}

main().catch((e) => {
  console.error(`web-test: ${e.stack || e}`);
  process.exit(1);
});
