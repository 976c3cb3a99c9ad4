// The landing page's prepaid session demo (public/landing-session.js) in a
// real browser against the real local server, driven like a visitor: start a
// session for 25 chunks, pay the 20-sat deposit with the dev wallet, open it
// with the dev wallet's return invoice, watch the balance tick down chunk by
// chunk, see the stream pause for a top-up after 20, pay the top-up, see the
// held stream finish by itself, close, and see the refund of exactly the
// unspent 15 sats, paid to the return invoice. Screenshots at each step go to
// test-artifacts/screenshots/ (not committed) to look at.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeInvoice } from 'l402-paywall/lightning';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../support/browser.js';
import { layoutProblems } from '../support/page-layout.js';
import { useDevServer } from '../support/server.js';

const TIMEOUT = { timeout: 120_000 };
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
// Slow enough to see the stream mid-way, fast enough for a short test: 25 chunks in about 5 s.
const CHUNK_INTERVAL_MS = 200;

describe('the prepaid session demo on the landing page, in Chromium', () => {
  const running = useDevServer(() => ({
    DEMO_STREAM_INTERVAL_MS: String(CHUNK_INTERVAL_MS),
    INVOICE_RATE_LIMIT_PER_MINUTE: '100000',
  }));
  let browser: TestBrowser;
  /** Console errors, uncaught exceptions and failed loads, per page. */
  const problems: string[] = [];

  beforeAll(async () => {
    // Opened (and migrated) before the page asks /api/health, which gives a database 10 s to answer.
    await running.ctx.database();
    browser = await launchBrowser();
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  async function open(viewport = DESKTOP): Promise<Page> {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    page.on('pageerror', (error) => problems.push(`uncaught ${error.message}`));
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      // The stream's first answer is a 402 by design (it carries the session challenge); Chromium logs every 4xx fetch.
      if (/status of 402/.test(message.text()) && new URL(message.location().url).pathname === '/api/demo/stream') return;
      problems.push(`console error ${message.text()} (${message.location().url})`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400 && !(response.status() === 402 && new URL(response.url()).pathname === '/api/demo/stream'))
        problems.push(`${response.status()} for ${response.url()}`);
    });
    await page.goto(`${running.url}/`);
    return page;
  }

  /** The section's screenshot, and the whole page's; the section's bytes, to tell the steps' pictures apart. */
  const shot = async (page: Page, name: string) => {
    // The sticky header would cover the part of the section scrolled under it: it stays at the top for the
    // pictures (set through the CSSOM: the page's CSP refuses the inline style Playwright's `style` option adds).
    const header = (position: string) => page.$eval('.top', (top, value) => ((top as HTMLElement).style.position = value), position);
    await header('static');
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-page.png`), fullPage: true });
    const section = await page.locator('#session').screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });
    await header('');
    return section;
  };

  const meter = (page: Page) =>
    page.evaluate(() =>
      Object.fromEntries(['deposited', 'spent', 'balance', 'refunded'].map((name) => [name, document.getElementById(`session-${name}`)!.textContent])),
    );
  const words = (page: Page) => page.$eval('#session-words', (element) => (element.textContent ?? '').split(' ').filter(Boolean).length);

  it(
    'a session paid by the dev wallet: 25 chunks on a 20-sat deposit pause for a top-up, resume by themselves, and the close refunds exactly the 15 sats unspent to the return invoice',
    TIMEOUT,
    async () => {
      const page = await open();
      const pictures: Buffer[] = [];

      // The offer: the stream's 402 carries a session challenge, its deposit shown as a QR code.
      await page.fill('#session-chunks', '25');
      await page.click('#session-begin');
      await page.locator('#deposit-invoice').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-offer-summary')).toMatch(/a deposit of 20 sats, then 1 sat per chunk/);
      expect(JSON.parse((await page.textContent('#session-offer-request'))!)).toMatchObject({ amount: '1', depositAmount: '20', currency: 'sat' });
      const depositInvoice = await page.inputValue('#deposit-bolt11');
      expect(decodeInvoice(depositInvoice).amountMsat).toBe(20_000);
      expect(await page.getAttribute('#deposit-open', 'href')).toBe(`lightning:${depositInvoice}`);
      expect(await page.$eval('#deposit-qr', (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
      expect(await page.isVisible('#deposit-devpay')).toBe(true);
      expect(await meter(page)).toEqual({ deposited: '0', spent: '0', balance: '0', refunded: '–' });
      pictures.push(await shot(page, 'session-deposit-desktop'));

      // Paid: the open step, with an amountless return invoice from the dev wallet.
      await page.click('#deposit-devpay');
      await page.locator('#session-step-open').waitFor({ state: 'visible' });
      await page.waitForFunction(() => (document.getElementById('session-return') as HTMLTextAreaElement).value !== '');
      const returnInvoice = await page.inputValue('#session-return');
      const returned = decodeInvoice(returnInvoice);
      expect(returned.amountMsat).toBeNull();

      // An invoice with an amount cannot take a refund: the page says so and sends nothing.
      let streamRequests = 0;
      page.on('request', (request) => {
        if (new URL(request.url()).pathname === '/api/demo/stream' && request.headers().authorization) streamRequests += 1;
      });
      await page.fill('#session-return', depositInvoice);
      await page.click('#session-open');
      await page.locator('#session-return-problem').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-return-problem')).toMatch(/names an amount/);
      expect(await page.getAttribute('#session-return', 'aria-invalid')).toBe('true');
      expect(streamRequests).toBe(0);
      await page.fill('#session-return', returnInvoice);
      expect(await page.isHidden('#session-return-problem')).toBe(true);

      // Every text the balance and the progress line show, in order, as the page writes them.
      await page.evaluate(() => {
        for (const id of ['session-balance', 'session-progress']) {
          const seen: string[] = [];
          Object.assign(window, { [id]: seen });
          new MutationObserver((records) => {
            for (const record of records) for (const node of record.addedNodes) seen.push(node.textContent ?? '');
          }).observe(document.getElementById(id)!, { childList: true });
        }
      });
      const written = (id: string) =>
        page.evaluate((name) => ((window as unknown as Record<string, string[]>)[name] ?? []).filter((value, i, all) => value !== all[i - 1]), id);

      await page.click('#session-open');
      await page.locator('#session-opened').waitFor({ state: 'visible' });
      expect(await page.isHidden('#session-open-form')).toBe(true);
      // Mid-stream: the balance is ticking down.
      await page.waitForFunction(() => /^Chunk (5|6|7|8|9|10) of 25/.test(document.getElementById('session-progress')!.textContent ?? ''));
      const midway = await meter(page);
      expect(Number(midway.balance)).toBeGreaterThan(0);
      expect(Number(midway.balance)).toBeLessThan(20);
      pictures.push(await shot(page, 'session-streaming-desktop'));

      // After 20 chunks the balance is spent: payment-need-topup, and a fresh deposit to pay.
      await page.locator('#topup-invoice').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-progress')).toMatch(/^Paused after chunk 20: the balance is spent/);
      expect(await page.textContent('#session-topup-reason')).toMatch(/payment-need-topup: 20 sats spent, 1 sat needed/);
      expect(await words(page)).toBe(20);
      expect(await meter(page)).toEqual({ deposited: '20', spent: '20', balance: '0', refunded: '–' });
      const topUpInvoice = await page.inputValue('#topup-bolt11');
      expect(topUpInvoice).not.toBe(depositInvoice);
      expect(decodeInvoice(topUpInvoice).amountMsat).toBe(20_000);
      expect(await page.$eval('#topup-qr', (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
      pictures.push(await shot(page, 'session-paused-desktop'));

      // Topped up: the held stream goes on by itself to its receipt.
      await page.click('#topup-devpay');
      await page.waitForFunction(() => /^Done: 25 chunks, 25 sats spent/.test(document.getElementById('session-progress')!.textContent ?? ''), null, {
        timeout: 20_000,
      });
      expect(await words(page)).toBe(25);
      expect(await page.textContent('#session-topup-done')).toMatch(/^Topped up 20 sats/);
      expect(await meter(page)).toEqual({ deposited: '40', spent: '25', balance: '15', refunded: '–' });
      // One sat per chunk, live: 19 down to 0 on the deposit, 20 once topped up, down to 15.
      expect(await written('session-balance')).toEqual([...Array.from({ length: 20 }, (_, i) => String(19 - i)), '20', '19', '18', '17', '16', '15']);
      expect(await written('session-progress')).toContain('Chunk 21 of 25: the stream resumed by itself after the top-up.');

      // Closed: exactly what was not spent comes back, paid to the return invoice.
      await page.click('#session-close');
      await page.locator('#session-closed').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-refund')).toBe('15 sats');
      expect(await page.textContent('#session-refund-detail')).toMatch(/^40 sats deposited − 25 sats spent\. refundStatus: succeeded/);
      await page.locator('#session-return-paid').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-return-paid')).toMatch(/^The dev wallet's return invoice was paid 15 sats/);
      expect(await meter(page)).toEqual({ deposited: '40', spent: '25', balance: '0', refunded: '15 sats' });
      expect(await page.isHidden('#session-close')).toBe(true);
      // The dev wallet says the same, asked directly.
      const status = await fetch(`${running.url}/api/dev/receive/${returned.paymentHash}`);
      expect(await status.json()).toMatchObject({ paid: true, amountMsat: 15_000 });
      expect(await layoutProblems(page), 'desktop, closed').toEqual([]);
      pictures.push(await shot(page, 'session-closed-desktop'));

      // Each step looks different from the one before (nothing stuck or blank).
      for (let i = 1; i < pictures.length; i++) expect(pictures[i]!.equals(pictures[i - 1]!), `screenshot ${i} differs from ${i - 1}`).toBe(false);

      // On a phone, the whole story fits the screen.
      await page.setViewportSize(PHONE);
      expect(await layoutProblems(page), 'phone, closed').toEqual([]);
      await shot(page, 'session-closed-phone');
      await page.close();
    },
  );

  it(
    'a refused credential is shown plainly, with its code; the session still opens, streams again from its balance (bearer) and refunds the rest',
    TIMEOUT,
    async () => {
      const page = await open(PHONE);
      await page.fill('#session-chunks', '3');
      await page.click('#session-begin');
      await page.locator('#deposit-invoice').waitFor({ state: 'visible' });
      await shot(page, 'session-deposit-phone');
      expect(await layoutProblems(page), 'phone, deposit').toEqual([]);
      await page.click('#deposit-devpay');
      await page.waitForFunction(() => (document.getElementById('session-return') as HTMLTextAreaElement).value !== '');
      // Someone on the path changes the preimage: the server refuses the open.
      let tampered = false;
      await page.route('**/api/demo/stream?*', async (route) => {
        const authorization = route.request().headers().authorization;
        if (tampered || !authorization) return route.continue();
        tampered = true;
        const credential = JSON.parse(Buffer.from(authorization.slice('Payment '.length), 'base64url').toString('utf8'));
        credential.payload.preimage = '00'.repeat(32);
        await route.continue({
          headers: { ...route.request().headers(), authorization: `Payment ${Buffer.from(JSON.stringify(credential)).toString('base64url')}` },
        });
      });
      await page.click('#session-open');
      await page.locator('#session-error').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-error')).toBe('SHA-256 of the preimage is not the payment hash of the deposit invoice (PREIMAGE_MISMATCH)');
      expect(await page.isEnabled('#session-open')).toBe(true);
      expect(await page.isHidden('#session-step-stream')).toBe(true);
      expect(await meter(page)).toMatchObject({ deposited: '0', balance: '0' });
      await shot(page, 'session-refused-phone');
      // The same deposit, its real preimage: opened, streamed, closed with nothing left to refund.
      await page.click('#session-open');
      await page.waitForFunction(() => /^Done: 3 chunks, 3 sats spent/.test(document.getElementById('session-progress')!.textContent ?? ''));
      expect(await meter(page)).toMatchObject({ deposited: '20', spent: '3', balance: '17' });
      expect(await page.isHidden('#session-error')).toBe(true);
      // Once more from the balance: a bearer credential, no new deposit.
      await page.click('#session-more');
      await page.waitForFunction(
        () =>
          document.getElementById('session-spent')!.textContent === '6' &&
          /^Done: 3 chunks/.test(document.getElementById('session-progress')!.textContent ?? ''),
      );
      expect(await meter(page)).toMatchObject({ deposited: '20', spent: '6', balance: '14' });
      expect(await page.isDisabled('#session-begin')).toBe(true); // one session at a time: close it first
      await page.click('#session-close');
      await page.locator('#session-closed').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-refund')).toBe('14 sats');
      expect(await page.isEnabled('#session-begin')).toBe(true);
      await page.close();
    },
  );

  it(
    "without the dev wallet (as in production): any wallet pays, the visitor pastes the preimage it shows (the server never hands a deposit's out), and the visitor's own return invoice is refunded",
    TIMEOUT,
    async () => {
      const page = await browser.context.newPage();
      await page.setViewportSize(DESKTOP);
      // The page learns of the dev wallet from GET /api/demo: here it hears of none.
      await page.route('**/api/demo', async (route) => {
        const response = await route.fetch();
        await route.fulfill({ response, json: { ...(await response.json()), devWallet: null } });
      });
      // A deployment whose backend cannot refund sells no session: said plainly.
      await page.route(
        '**/api/demo/stream?*',
        (route) =>
          route.fulfill({
            status: 503,
            json: { error: 'The lnbits backend cannot refund prepaid sessions, so the demo stream is off', code: 'SESSIONS_UNAVAILABLE' },
          }),
        { times: 1 },
      );
      await page.goto(`${running.url}/`);
      await page.waitForLoadState('networkidle');
      await page.fill('#session-chunks', '3');
      await page.click('#session-begin');
      await page.locator('#session-error').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-error')).toBe(
        'The lnbits backend cannot refund prepaid sessions, so the demo stream is off (SESSIONS_UNAVAILABLE)',
      );
      expect(await page.isHidden('#session-step-offer')).toBe(true);

      await page.click('#session-begin');
      await page.locator('#deposit-invoice').waitFor({ state: 'visible' });
      expect(await page.isHidden('#session-error')).toBe(true);
      expect(await page.isHidden('#deposit-devpay')).toBe(true);
      // Another wallet pays it (the dev node, from outside the page), and shows its preimage.
      const askedForPreimages: string[] = [];
      page.on('request', (request) => {
        if (request.url().includes('/api/demo/preimage')) askedForPreimages.push(request.url());
      });
      const paid = await fetch(`${running.url}/api/dev/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ invoice: await page.inputValue('#deposit-bolt11') }),
      });
      expect(paid.status).toBe(200);
      const { preimage, paymentHash } = (await paid.json()) as { preimage: string; paymentHash: string };
      // The server will not hand it over: the page asks the visitor, and checks what is pasted.
      expect((await fetch(`${running.url}/api/demo/preimage?hash=${paymentHash}`)).status).toBe(403);
      expect(await page.isVisible('#deposit-preimage')).toBe(true);
      await page.fill('#deposit-preimage', 'ab'.repeat(32));
      await page.click('#deposit-preimage-use');
      await page.locator('#deposit-preimage-problem').waitFor({ state: 'visible' });
      expect(await page.textContent('#deposit-preimage-problem')).toMatch(/^This is not this invoice's preimage/);
      expect(await page.isHidden('#session-step-open')).toBe(true);
      await page.fill('#deposit-preimage', ` ${preimage.toUpperCase()} `);
      await page.click('#deposit-preimage-use');
      await page.locator('#session-step-open').waitFor({ state: 'visible' });
      expect(askedForPreimages).toEqual([]);
      expect(await page.inputValue('#session-return')).toBe('');
      expect(await page.textContent('#session-return-note')).toMatch(/^From your wallet/);
      await page.click('#session-open');
      expect(await page.textContent('#session-return-problem')).toMatch(/^Paste an invoice without an amount/);
      await page.fill('#session-return', 'lnbc1notaninvoice');
      await page.click('#session-open');
      expect(await page.textContent('#session-return-problem')).toBe('This is not a Lightning invoice (BOLT 11).');
      // The visitor's wallet makes an invoice without an amount, pasted as a wallet shares it.
      const mine = (await (
        await fetch(`${running.url}/api/dev/receive`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      ).json()) as {
        invoice: string;
        paymentHash: string;
      };
      await page.fill('#session-return', `lightning:${mine.invoice}`);
      await page.click('#session-open');
      await page.waitForFunction(() => /^Done: 3 chunks, 3 sats spent/.test(document.getElementById('session-progress')!.textContent ?? ''));
      await shot(page, 'session-any-wallet-desktop');
      await page.click('#session-close');
      await page.locator('#session-closed').waitFor({ state: 'visible' });
      expect(await page.textContent('#session-refund')).toBe('17 sats');
      expect(await page.textContent('#session-refund-detail')).toMatch(/refundStatus: succeeded/);
      // The page cannot ask another wallet; the wallet itself was paid.
      expect(await page.isHidden('#session-return-paid')).toBe(true);
      expect(await (await fetch(`${running.url}/api/dev/receive/${mine.paymentHash}`)).json()).toMatchObject({ paid: true, amountMsat: 17_000 });
      await page.close();
    },
  );

  it('no page logged a console error, threw, or loaded anything that failed', () => {
    expect(problems).toEqual([]);
  });
});
