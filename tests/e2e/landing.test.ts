// The landing page (public/index.html) and the dashboard's development login,
// in a real browser against the real local server: the whole demo purchase by
// clicking, the directory, logging in with the dev wallet to see that
// purchase, no console error on any page, and screenshots at phone and
// desktop widths (test-artifacts/screenshots/, not committed) to look at.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../support/browser.js';
import { layoutProblems } from '../support/page-layout.js';

const TIMEOUT = { timeout: 90_000 };
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
const VIEWPORTS = [
  ['phone', PHONE],
  ['desktop', DESKTOP],
] as const;

const backends = await databaseBackends();
const backend = backends.find((b) => b.name === 'PostgreSQL' && b.skip === undefined) ?? backends.find((b) => b.name === 'PGlite')!;

describe(`the landing page and the dev login in Chromium, on ${backend.name}`, () => {
  const running = useDevServerOn(backend, () => ({ AUTH_RATE_LIMIT_PER_MINUTE: '100000', INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));
  let browser: TestBrowser;
  /** Console errors and uncaught exceptions, per page URL. */
  const problems: string[] = [];
  let demoPaymentHash = '';

  beforeAll(async () => {
    browser = await launchBrowser();
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await running.db.query(
      `INSERT INTO apis (url, name, description, price_sats, category, lightning_address, created_at) VALUES
       ('https://weather.example/api/now', 'Weather now', 'Current conditions for any city', 5, 'weather', 'w@example.com', now() - interval '3 hours'),
       ('https://quotes.example/api/quote', 'Stock quotes', NULL, 21, 'finance', 'q@example.com', now() - interval '2 hours'),
       ('https://gpt.example/api/complete', 'Completion', 'A small language model, by the token', 100, 'ai', 'a@example.com', now() - interval '1 hour')`,
    );
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  async function open(path: string, viewport = DESKTOP): Promise<Page> {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    page.on('pageerror', (error) => problems.push(`${path}: uncaught ${error.message}`));
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      // The demo's first request answers 402 by design (it carries the invoice); Chromium logs every 4xx fetch.
      if (/status of 402/.test(message.text()) && message.location().url.endsWith('/api/demo/btc-price')) return;
      problems.push(`${path}: console error ${message.text()} (${message.location().url})`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400 && response.status() !== 402) problems.push(`${path}: ${response.status()} for ${response.url()}`);
    });
    await page.goto(`${running.url}${path}`);
    return page;
  }

  const shot = async (page: Page, name: string, section?: string) => {
    // From the top, so the sticky header sits where a visitor sees it.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
    if (section) await page.locator(section).screenshot({ path: join(SCREENSHOT_DIR, `${name}-section.png`) });
  };

  it('is served with the page headers, loads under 100 KB of JavaScript, and shows the directory with categories and prices', TIMEOUT, async () => {
    const scripts: number[] = [];
    const page = await browser.context.newPage();
    page.on('response', async (response) => {
      if (response.request().resourceType() === 'script') scripts.push((await response.body()).length);
    });
    const response = await page.goto(`${running.url}/`);
    expect(response!.headers()['x-frame-options']).toBe('DENY');
    await page.waitForFunction(() => document.querySelectorAll('#directory-list li').length === 3);
    await page.waitForLoadState('networkidle');
    const total = scripts.reduce((sum, bytes) => sum + bytes, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThan(100 * 1024);
    await page.close();

    const landing = await open('/');
    await landing.waitForFunction(() => document.querySelectorAll('#directory-list li').length === 3);
    const items = await landing.$$eval('#directory-list li', (rows) =>
      rows.map((row) => [row.querySelector('.api-name')?.textContent, row.querySelector('.badge')?.textContent, row.querySelector('.api-price')?.textContent]),
    );
    expect(items).toEqual([
      ['Completion', 'ai', '100 sat'],
      ['Stock quotes', 'finance', '21 sat'],
      ['Weather now', 'weather', '5 sat'],
    ]);
    expect(await landing.getAttribute('#directory-list li:last-child .api-name', 'href')).toBe('https://weather.example/api/now');
    // Filter by category, with the keyboard-operable select.
    await landing.selectOption('#directory-category', 'finance');
    await landing.waitForFunction(() => document.querySelectorAll('#directory-list li').length === 1);
    expect(await landing.textContent('#directory-list .api-name')).toBe('Stock quotes');
    await landing.selectOption('#directory-category', 'storage');
    await landing.locator('#directory-empty').waitFor({ state: 'visible' });
    expect(await landing.textContent('#directory-empty')).toBe('No API is listed in storage yet.');
    // A configured local server has nothing to warn about.
    expect(await landing.locator('#setup').isHidden()).toBe(true);
    await landing.close();
  });

  it(
    'the code samples wrap inside their boxes (no line hidden under an edge) and nothing reaches past the screen, at phone and desktop widths',
    TIMEOUT,
    async () => {
      for (const [name, viewport] of VIEWPORTS) {
        const page = await open('/', viewport);
        await page.locator('#directory-list li').first().waitFor();
        await page.waitForFunction(() => Array.from(document.querySelectorAll('#use .origin')).every((origin) => origin.textContent !== ''));
        expect(await layoutProblems(page), `${name}, as served here`).toEqual([]);
        await page.locator('#use').screenshot({ path: join(SCREENSHOT_DIR, `landing-use-${name}.png`) });
        // A deployment's origin is longer than 127.0.0.1:port, and so are the lines it is shown in.
        await page.evaluate(() => {
          for (const origin of document.querySelectorAll('#use .origin')) origin.textContent = 'https://l402-paywall-of-a-long-team-name.vercel.app';
        });
        expect(await layoutProblems(page), `${name}, with a long origin`).toEqual([]);
        await page.locator('#use').screenshot({ path: join(SCREENSHOT_DIR, `landing-use-long-origin-${name}.png`) });
        await page.close();
      }
    },
  );

  it('the whole demo purchase by clicking: the invoice as a QR code, the dev wallet pays, the price and the three curl steps appear', TIMEOUT, async () => {
    for (const [name, viewport] of VIEWPORTS) {
      const page = await open('/', viewport);
      await page.locator('#directory-list li').first().waitFor();
      await shot(page, `landing-${name}`);
      // Keyboard: the buy button is reachable and works with Enter.
      await page.focus('#demo-buy');
      await page.keyboard.press('Enter');
      await page.locator('#demo-invoice').waitFor({ state: 'visible' });
      const invoice = await page.inputValue('#demo-bolt11');
      expect(invoice).toMatch(/^lnbcrt10n1/); // 1 sat on the dev node's regtest
      expect(await page.getAttribute('#demo-open', 'href')).toBe(`lightning:${invoice}`);
      expect(await page.getAttribute('#demo-qr', 'src')).toMatch(/^data:image\/svg\+xml;charset=utf-8,%3Csvg/);
      expect(await page.$eval('#demo-qr', (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
      expect(await page.locator('#demo-webln').isHidden()).toBe(true); // no window.webln in this browser
      await shot(page, `landing-invoice-${name}`, '#demo');

      await page.click('#demo-devpay');
      await page.locator('#demo-result').waitFor({ state: 'visible' });
      expect(await page.textContent('#demo-usd')).toBe('$100,000.00'); // BTC_PRICE_SOURCES=none: the labelled simulated price
      expect(await page.textContent('#demo-source')).toBe('simulated (no live price source answered)');
      expect(Date.parse((await page.getAttribute('#demo-time', 'datetime'))!)).not.toBeNaN();
      const [ask, pay, retry] = await Promise.all(['#demo-step-ask', '#demo-step-pay', '#demo-step-retry'].map((id) => page.textContent(id)));
      expect(ask).toContain(`curl -i ${running.url}/api/demo/btc-price`);
      expect(ask).toContain(invoice);
      expect(pay).toContain(`curl -X POST ${running.url}/api/dev/pay`);
      const preimage = /# preimage: ([0-9a-f]{64})/.exec(pay!)?.[1];
      expect(preimage).toBeTruthy();
      const authorization = /-H "Authorization: (L402 [A-Za-z0-9+/=_-]+:[0-9a-f]{64})"/.exec(retry!)?.[1];
      expect(authorization).toBe(`L402 ${/# token: +(\S+)/.exec(ask!)?.[1]}:${preimage}`);
      expect(retry).toContain('"source":"simulated"');
      // The curl lines hold real values: the token was spent by the page, so the same credential is refused now.
      const replay = await fetch(`${running.url}/api/demo/btc-price`, { headers: { authorization: authorization! } });
      expect(replay.status).toBe(402);
      expect(((await replay.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
      // The macaroon's identifier names its payment hash (docs/l402-token.md): version byte 2, the
      // identifier field (type 2, length 66), then uint16 version 0 and the 32-byte hash.
      const macaroon = Buffer.from(authorization!.slice('L402 '.length).split(':')[0]!, 'base64');
      expect([...macaroon.subarray(0, 5)]).toEqual([2, 2, 66, 0, 0]);
      demoPaymentHash = macaroon.subarray(5, 37).toString('hex');
      // The steps carry whole invoices and tokens: they wrap inside their boxes.
      expect(await layoutProblems(page), `${name}, after the purchase`).toEqual([]);
      await shot(page, `landing-paid-${name}`, '#demo');
      await page.close();
    }
    expect(demoPaymentHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the dev login opens the dashboard, which shows the demo purchase just made', TIMEOUT, async () => {
    expect(demoPaymentHash, 'the purchase test ran first').toMatch(/^[0-9a-f]{64}$/);
    for (const [name, viewport] of VIEWPORTS) {
      const page = await open('/dashboard.html', viewport);
      await page.locator('#login-dev').waitFor({ state: 'visible' });
      await shot(page, `dashboard-login-${name}`);
      await page.click('#login-dev');
      await page.locator('#app').waitFor({ state: 'visible' });
      expect(await page.textContent('#who-role')).toBe('admin');
      // The payment log is written after the answer went out: refresh until it is there.
      await expect
        .poll(
          async () => {
            await page.click('#refresh');
            await page.waitForFunction(() => !(document.getElementById('refresh') as HTMLButtonElement).disabled);
            return page.$$eval('#recent .hash', (hashes) => hashes.map((hash) => (hash as HTMLElement).title));
          },
          { timeout: 30_000, interval: 500 },
        )
        .toContain(demoPaymentHash);
      const row = await page.$$eval('#recent tbody tr', (rows) =>
        rows.map((r) => Array.from((r as HTMLTableRowElement).cells, (cell) => cell.textContent ?? '')),
      );
      expect(row.some((cells) => cells[1] === '/api/demo/btc-price' && cells[2] === '1')).toBe(true);
      await shot(page, `dashboard-${name}`);
      await page.close();
    }
  });

  it('no page logged a console error, threw, or loaded anything that failed (favicon included)', () => {
    expect(problems).toEqual([]);
  });

  it('text and controls meet WCAG AA contrast (4.5:1) in the light and dark schemes', TIMEOUT, async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await browser.context.newPage();
      await page.emulateMedia({ colorScheme });
      await page.goto(`${running.url}/`);
      await page.locator('#directory-list li').first().waitFor();
      const ratios = await page.evaluate(() => {
        const rgb = (color: string) => (color.match(/[\d.]+/g) ?? []).map(Number);
        const luminance = ([r, g, b]: number[]) => {
          const [R, G, B] = [r!, g!, b!].map((v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
          return 0.2126 * R! + 0.7152 * G! + 0.0722 * B!;
        };
        // The first ancestor with an opaque background is what the text sits on.
        const background = (element: Element | null): number[] => {
          for (let at = element; at; at = at.parentElement) {
            const color = rgb(getComputedStyle(at).backgroundColor);
            if (color.length === 3 || (color.length === 4 && color[3]! > 0.5)) return color.slice(0, 3);
          }
          return rgb(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
        };
        const selectors = [
          '.hero h1',
          '.hero .accent',
          '.lede',
          '.how span',
          '#demo .muted',
          '#demo-buy',
          '#session > .muted',
          '#session-begin',
          '.meter dt',
          '.meter dd',
          '.field-problem',
          '.api-name',
          '.api-url',
          '.badge',
          '.nav-links a',
          '.foot a',
          '#use pre code',
        ];
        return selectors.map((selector) => {
          const element = document.querySelector(selector)!;
          const [a, b] = [luminance(rgb(getComputedStyle(element).color)), luminance(background(element))];
          return [selector, Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100] as const;
        });
      });
      for (const [selector, ratio] of ratios) expect(ratio, `${colorScheme}: ${selector} contrast`).toBeGreaterThanOrEqual(4.5);
      await page.close();
    }
  });

  it('the libraries served to the browser (public/vendor/) are the files npm installed, unchanged, each with its licence', () => {
    const vendored = [
      { served: 'uqr-0.1.3.mjs', from: 'uqr', version: '0.1.3', file: 'dist/index.mjs' },
      { served: 'uqr-LICENSE.txt', from: 'uqr', version: '0.1.3', file: 'LICENSE' },
      { served: 'uPlot-1.6.32.esm.js', from: 'uplot', version: '1.6.32', file: 'dist/uPlot.esm.js' },
      { served: 'uPlot-1.6.32.min.css', from: 'uplot', version: '1.6.32', file: 'dist/uPlot.min.css' },
      { served: 'uPlot-LICENSE.txt', from: 'uplot', version: '1.6.32', file: 'LICENSE' },
    ];
    const vendorDir = new URL('../../public/vendor/', import.meta.url);
    for (const { served, from, version, file } of vendored) {
      const installed = new URL(`../../node_modules/${from}/`, import.meta.url);
      expect((JSON.parse(readFileSync(new URL('package.json', installed), 'utf8')) as { version: string }).version, `${from}'s version`).toBe(version);
      expect(readFileSync(new URL(served, vendorDir)).equals(readFileSync(new URL(file, installed))), `public/vendor/${served} is ${from}/${file}`).toBe(true);
    }
    // Every file there is one of those, or a declaration file the type checker reads (never served to a page).
    expect(
      readdirSync(vendorDir)
        .filter((name) => !/\.d\.m?ts$/.test(name))
        .sort(),
    ).toEqual(vendored.map(({ served }) => served).sort());
  });

  // Last: switches the service to production.
  it('on a fresh deployment, tells the operator what is missing and how to set it', TIMEOUT, async () => {
    try {
      running.redeploy(running.config({ NODE_ENV: 'production' }));
      const page = await browser.context.newPage();
      await page.setViewportSize(PHONE);
      await page.goto(`${running.url}/`);
      await page.locator('#setup').waitFor({ state: 'visible' });
      const missing = await page.$$eval('#setup-missing li', (items) => items.map((item) => item.textContent ?? ''));
      expect(missing.join('\n')).toMatch(/missing UPSTASH_REDIS_REST_URL .*: create an Upstash Redis database/);
      expect(missing.join('\n')).toMatch(/missing LIGHTNING_PROVIDER .*: your Lightning backend/);
      await shot(page, 'landing-not-configured-phone');
      await page.close();
    } finally {
      running.restore();
    }
  });
});
