'use strict';
/*
 * shot.js DIST OUT.png - the README's screenshot (make web-shot): the page on the seed example,
 * from its top to the end of the picture, at 1000 px and scale 0.7 (small enough for git).
 */
const path = require('path');
const { Browser } = require('./cdp.js');
const { start } = require('./serve.js');

(async () => {
  const [dist, out] = process.argv.slice(2);
  const srv = await start(dist);
  const b = await Browser.launch(process.env.CHROMIUM || '/usr/bin/chromium');
  try {
    const p = await b.newPage();
    await p.send('Emulation.setDeviceMetricsOverride', { width: 1000, height: 900, deviceScaleFactor: 1, mobile: false });
    await p.navigate(srv.url + 'index.html#seed');
    for (let i = 0; i < 500 && !(await p.evaluate("document.body.getAttribute('data-answered')")); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    /* The inputs collapsed to the command line: the shot shows the answer. */
    await p.evaluate("document.querySelector('.files').style.display = 'none'; 1");
    const bottom = await p.evaluate("Math.ceil(document.getElementById('download-svg').getBoundingClientRect().bottom + window.scrollY + 8)");
    const shot = await p.send('Page.captureScreenshot', {
      format: 'png', captureBeyondViewport: true, clip: { x: 0, y: 0, width: 1000, height: bottom, scale: 0.7 },
    });
    require('fs').writeFileSync(out, Buffer.from(shot.data, 'base64'));
    console.log(`shot: ${path.resolve(out)} (1000 x ${bottom} px at 0.7)`);
    if (p.errors.length) throw new Error(p.errors.join(' | '));
  } finally {
    await b.close();
    await srv.close();
  }
})().catch((e) => {
  console.error(`shot: ${e.message || e}`);
  process.exit(1);
});
