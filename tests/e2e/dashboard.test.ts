// The operators' dashboard (public/dashboard.html) in a real browser against
// the real local server. The test plays the phone wallet: it reads the LNURL
// the page shows, signs k1 with a real secp256k1 key and calls back, the way a
// wallet does after scanning the QR code. Then it checks what the page shows
// against payments seeded in the database.
//
// The browser is /usr/bin/chromium when installed, else the one npm brings
// (tests/support/browser.ts): never skipped.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../lib/db/index.js';
import { decodeLnurl } from '../../lib/lightning/lnurl.js';
import { testWallet } from '../support/lnurl-wallet.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { launchBrowser, type TestBrowser } from '../support/browser.js';

const DAY_MS = 86_400_000;
const TIMEOUT = { timeout: 90_000 };

// Real PostgreSQL when it answers (always in CI), else PGlite: the page is what is tested here.
const backends = await databaseBackends();
const backend = backends.find((b) => b.name === 'PostgreSQL' && b.skip === undefined) ?? backends.find((b) => b.name === 'PGlite')!;

const admin = testWallet();
const format = (n: number) => new Intl.NumberFormat('en-US').format(n);

interface Seed {
  endpoint: string;
  amount_sats: number;
  owner_address: string | null;
  paid_at: Date;
  fee_msat?: number;
}

async function seedPayments(db: Database, seeds: Seed[]): Promise<Array<Seed & { payment_hash: string }>> {
  const rows = seeds.map((seed) => ({ ...seed, payment_hash: randomBytes(32).toString('hex') }));
  for (const row of rows) {
    await db.query('INSERT INTO payments (id, payment_hash, endpoint, amount_sats, owner_address, paid_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      randomUUID(),
      row.payment_hash,
      row.endpoint,
      row.amount_sats,
      row.owner_address,
      row.paid_at,
    ]);
    if (row.fee_msat !== undefined && row.owner_address !== null) {
      const amountMsat = row.amount_sats * 1000;
      await db.query(`INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state) VALUES ($1, $2, $3, $4, $5, 'paid')`, [
        row.payment_hash,
        row.owner_address,
        amountMsat,
        amountMsat - row.fee_msat,
        row.fee_msat,
      ]);
    }
  }
  return rows;
}

describe(`the dashboard in Chromium, on ${backend.name}`, () => {
  const running = useDevServerOn(backend, () => ({ ADMIN_PUBKEYS: admin.pubkey, AUTH_RATE_LIMIT_PER_MINUTE: '100000' }));
  let browser: TestBrowser | undefined;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** A new tab (its own sessionStorage, so its own session) on the dashboard. */
  async function openDashboard(): Promise<Page> {
    const page = await browser!.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) pageErrors.push(message.text());
    });
    await page.goto(`${running.url}/dashboard.html`);
    return page;
  }

  /** The LNURL of the challenge the page shows now (different from `previous`, when given). */
  async function shownLnurl(page: Page, prefix: 'login' | 'erase', previous = ''): Promise<string> {
    await page.waitForFunction(
      ([id, old]) => {
        const link = document.getElementById(id!);
        const lnurl = link?.dataset.lnurl ?? '';
        return lnurl !== '' && lnurl !== old && link!.offsetParent !== null;
      },
      [`${prefix}-link`, previous],
    );
    const lnurl = (await page.locator(`#${prefix}-link`).getAttribute('data-lnurl'))!;
    // What a wallet would scan: the upper-case LNURL, also offered as a lightning: link.
    expect(lnurl).toMatch(/^LNURL1[02-9AC-HJ-NP-Z]+$/);
    expect(await page.locator(`#${prefix}-link`).getAttribute('href')).toBe(`lightning:${lnurl}`);
    // The QR code is the server's SVG shown as an image, and the browser decoded it.
    expect(await page.locator(`#${prefix}-qr`).getAttribute('src')).toMatch(/^data:image\/svg\+xml;charset=utf-8,%3Csvg/);
    expect(await page.$eval(`#${prefix}-qr`, (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
    return lnurl;
  }

  async function logIn(page: Page, wallet = testWallet()): Promise<void> {
    const lnurl = await shownLnurl(page, 'login');
    expect(await wallet.scan(lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.waitForFunction((key) => document.getElementById('who-pubkey')?.textContent === key, wallet.pubkey);
  }

  /** Waits until the page has shown the stats answer (the cards are filled in). */
  async function statsShown(page: Page): Promise<void> {
    await page.waitForFunction(() => document.getElementById('stat-payments')?.textContent !== '–' && document.body.dataset.tier !== undefined);
  }

  const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim();
  const tableRows = (page: Page, table: string) =>
    page.$$eval(`${table} tbody tr`, (rows) => rows.map((row) => Array.from((row as HTMLTableRowElement).cells, (cell) => cell.textContent ?? '')));

  async function statusShows(page: Page, pattern: RegExp): Promise<string> {
    await page.waitForFunction((source) => {
      const status = document.getElementById('status')!;
      return !status.hidden && new RegExp(source).test(status.textContent ?? '');
    }, pattern.source);
    return text(page, '#status');
  }

  it('is served with headers that forbid framing it on another site (clickjacking) and sniffing its type', async () => {
    const response = await fetch(`${running.url}/dashboard.html`);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('content-security-policy')).toBe("frame-ancestors 'none'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    await response.body?.cancel();
  });

  it("an admin logs in by signing the QR code, sees every owner's stats, downloads the CSV, and logs out back to a new QR code", TIMEOUT, async () => {
    const now = Date.now();
    const seeded = await seedPayments(running.db, [
      { endpoint: '/api/weather', amount_sats: 100, owner_address: 'shop@example.com', paid_at: new Date(now - 3_600_000) },
      { endpoint: '/api/weather', amount_sats: 250, owner_address: 'shop@example.com', paid_at: new Date(now - 2 * 3_600_000), fee_msat: 750 },
      { endpoint: '/api/forecast', amount_sats: 1000, owner_address: 'shop@example.com', paid_at: new Date(now - 3 * DAY_MS), fee_msat: 3000 },
      { endpoint: '/api/quote', amount_sats: 42, owner_address: 'blog@example.com', paid_at: new Date(now - 10 * DAY_MS) },
      { endpoint: '/api/demo/btc-price', amount_sats: 1, owner_address: null, paid_at: new Date(now - 2 * DAY_MS) },
    ]);
    const page = await openDashboard();
    await logIn(page, admin);
    await statsShown(page);

    // Brute force over what was seeded.
    const total = seeded.reduce((sum, row) => sum + row.amount_sats, 0);
    const week = seeded.filter((row) => row.paid_at.getTime() > now - 7 * DAY_MS);
    const feeSats = Math.floor(seeded.reduce((sum, row) => sum + (row.fee_msat ?? 0), 0) / 1000);
    const walletSats = Math.floor((await running.ctx.provider.balance()).balanceMsat / 1000);
    expect(await text(page, '#who-role')).toBe('admin');
    expect(await text(page, '#scope-note')).toMatch(/Full history of every owner/);
    expect(await text(page, '#stat-payments')).toBe(format(seeded.length));
    expect(await text(page, '#stat-sats')).toBe(`${format(total)} sat`);
    expect(await text(page, '#stat-fee')).toBe(`${format(feeSats)} sat`);
    expect(await text(page, '#stat-wallet-label')).toBe('Service wallet');
    expect(await text(page, '#stat-wallet')).toBe(`${format(walletSats)} sat`);
    expect(await text(page, '#stat-wallet-usd')).toBe('USD: no live BTC price'); // BTC_PRICE_SOURCES=none: no made-up dollars
    expect(await text(page, '#stat-trend-payments')).toBe(format(week.length));
    expect(await text(page, '#stat-trend-sats')).toBe(`${format(week.reduce((sum, row) => sum + row.amount_sats, 0))} sat`);

    expect(await tableRows(page, '#by-owner')).toEqual([
      ['shop@example.com', '3', '1,350'],
      ['blog@example.com', '1', '42'],
    ]);

    // One bar per day from the first payment to today; each day's bar carries that day's sats.
    const bars = await page.$$eval('#by-day .bar', (elements) =>
      elements.map((bar) => [(bar as HTMLElement).dataset.day, Number((bar as HTMLElement).dataset.sats), (bar as HTMLElement).style.height]),
    );
    const perDay = new Map<string, number>();
    for (const row of seeded) {
      const day = row.paid_at.toISOString().slice(0, 10);
      perDay.set(day, (perDay.get(day) ?? 0) + row.amount_sats);
    }
    const firstDay = Math.min(...seeded.map((row) => Date.parse(row.paid_at.toISOString().slice(0, 10))));
    const today = Date.parse(new Date().toISOString().slice(0, 10));
    expect(bars).toHaveLength((today - firstDay) / DAY_MS + 1);
    expect(Object.fromEntries(bars.filter(([, sats]) => (sats as number) > 0).map(([day, sats]) => [day, sats]))).toEqual(Object.fromEntries(perDay));
    const tallest = Math.max(...perDay.values());
    expect(bars.find(([, sats]) => sats === tallest)?.[2]).toBe('100%');

    const newestFirst = [...seeded].sort((a, b) => b.paid_at.getTime() - a.paid_at.getTime());
    expect((await tableRows(page, '#recent')).map(([, endpoint, sats, address]) => [endpoint, sats, address])).toEqual(
      newestFirst.map((row) => [row.endpoint, format(row.amount_sats), row.owner_address ?? '–']),
    );
    // Hashes are shortened on screen; the whole one is in the title.
    expect(await page.$$eval('#recent .hash', (hashes) => hashes.map((hash) => (hash as HTMLElement).title))).toEqual(
      newestFirst.map((row) => row.payment_hash),
    );

    // CSV: fetched with the Bearer header and saved as a file.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
    expect(download.suggestedFilename()).toMatch(/^payments-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = readFileSync((await download.path())!, 'utf8')
      .trim()
      .split('\r\n');
    expect(csv[0]).toBe('id,endpoint,payment_hash,amount_sats,owner_address,paid_at');
    expect(csv).toHaveLength(seeded.length + 1);
    for (const row of seeded) expect(csv.some((line) => line.includes(row.payment_hash) && line.includes(`,${row.amount_sats},`))).toBe(true);

    // A server failure is shown, not a crash; the page recovers on the next refresh.
    await page.route('**/api/stats', (route) => route.fulfill({ status: 500, contentType: 'text/plain', body: 'upstream exploded' }));
    await page.click('#refresh');
    expect(await statusShows(page, /500/)).toMatch(/The server answered 500/);
    await page.unroute('**/api/stats');
    await page.click('#refresh');
    await page.waitForFunction(() => !(document.getElementById('refresh') as HTMLButtonElement).disabled);
    expect(await text(page, '#stat-payments')).toBe(format(seeded.length));

    // The session token is in sessionStorage only, and logging out revokes it on the server.
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('l402.dashboard.session'), local: localStorage.length }));
    expect(stored.local).toBe(0);
    const token = (JSON.parse(stored.session!) as { token: string }).token;
    expect((await fetch(`${running.url}/api/session`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const before = (await page.locator('#login-link').getAttribute('data-lnurl')) ?? '';
    await page.click('#logout');
    await page.locator('#login').waitFor({ state: 'visible' });
    await shownLnurl(page, 'login', before);
    expect(await page.evaluate(() => sessionStorage.getItem('l402.dashboard.session'))).toBeNull();
    const after = await fetch(`${running.url}/api/session`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { code: string }).code).toBe('SESSION_REVOKED');
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('an expired login code is not polled forever: the page says so and a new code logs in', TIMEOUT, async () => {
    const page = await openDashboard();
    const lnurl = await shownLnurl(page, 'login');
    // Expire the challenge on the server (what five minutes do), without waiting five minutes.
    const k1 = new URL(decodeLnurl(lnurl)).searchParams.get('k1')!;
    expect(await running.ctx.store.del(`lnurl-auth:challenge:${k1}`)).toBe(1);
    await page.locator('#login-expired').waitFor({ state: 'visible' });
    expect(await text(page, '#login-expired-text')).toMatch(/expired/);
    expect(await page.locator('#login-challenge').isHidden()).toBe(true);
    // The expired code is refused to a wallet too; a new one works.
    expect((await testWallet().scan(lnurl)).body.status).toBe('ERROR');
    await page.click('#login-new');
    const wallet = testWallet();
    const fresh = await shownLnurl(page, 'login', lnurl);
    expect(fresh).not.toBe(lnurl);
    expect((await wallet.scan(fresh)).body.status).toBe('OK');
    await page.locator('#app').waitFor({ state: 'visible' });
    expect(await text(page, '#who-role')).toBe('owner');
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  describe('an owner (not an admin)', () => {
    let owner: OwnerServer;
    beforeAll(async () => {
      const ctx = running.ctx;
      // The owner's node shares the service's store, so the service's dev node can pay its invoices.
      owner = await startOwnerServer({ store: ctx.store, settings: { commentAllowed: 64 } });
      // The 1-sat proofs are paid from the service's wallet.
      await ctx.devNode!.pay((await ctx.devNode!.createInvoice({ amountMsat: 100_000 })).invoice);
    });
    afterAll(() => owner?.close());

    it('links an address through the form (errors from the API shown), then sees its last 7 days only, no CSV, and can erase its data', TIMEOUT, async () => {
      const alice = owner.address('alice');
      const now = Date.now();
      await seedPayments(running.db, [
        { endpoint: '/api/report', amount_sats: 500, owner_address: alice, paid_at: new Date(now - 2 * DAY_MS), fee_msat: 1500 },
        { endpoint: '/api/report', amount_sats: 700, owner_address: alice, paid_at: new Date(now - 20 * DAY_MS) },
      ]);
      const wallet = testWallet();
      const page = await openDashboard();
      await logIn(page, wallet);
      await statsShown(page);
      expect(await text(page, '#who-role')).toBe('owner');
      expect(await text(page, '#link-list')).toBe('No address linked yet.');
      expect(await text(page, '#stat-payments')).toBe('0');
      await page.locator('#link-start').waitFor({ state: 'visible' });

      // An address whose server takes no payment comments cannot receive the code: the API's error is shown.
      owner.setBehaviour('honest', { commentAllowed: 0 });
      await page.fill('#link-address', owner.address('bob'));
      await page.click('#link-start button[type=submit]');
      expect(await statusShows(page, /COMMENT_NOT_SUPPORTED/)).toMatch(/does not accept payment comments/);
      expect(await page.locator('#link-confirm').isHidden()).toBe(true);

      // An honest address: 1 sat with the code in its comment, a wrong code is refused, the right one links.
      owner.setBehaviour('honest', { commentAllowed: 64 });
      await page.fill('#link-address', alice);
      await page.click('#link-start button[type=submit]');
      await page.locator('#link-confirm').waitFor({ state: 'visible' });
      expect(await text(page, '#link-sent')).toContain(`We sent 1 sat to ${alice} with a code in the payment comment`);
      const comment = owner.requests.filter((r) => r.stage === 'callback' && r.username === 'alice').at(-1)?.comment ?? '';
      const code = /^L402 link code ([0-9A-Z]{4}-[0-9A-Z]{4})$/.exec(comment)?.[1];
      expect(code, comment).toBeDefined();
      await page.fill('#link-code', code === '0000-0000' ? '1111-1111' : '0000-0000');
      await page.click('#link-confirm button[type=submit]');
      expect(await statusShows(page, /WRONG_CODE/)).toMatch(/not the code sent to .* attempt\(s\) left/);
      expect(await page.locator('#link-confirm').isVisible()).toBe(true);
      await page.fill('#link-code', code!.toLowerCase());
      await page.click('#link-confirm button[type=submit]');
      expect(await statusShows(page, /is linked/)).toContain(alice);
      await page.waitForFunction((address) => document.getElementById('link-list')?.textContent?.includes(address), alice);

      // Free tier: the last 7 days of the linked address.
      await page.waitForFunction(() => document.getElementById('stat-payments')?.textContent === '1');
      expect(await text(page, '#scope-note')).toMatch(/last 7 days of your linked addresses \(free\)/);
      expect(await text(page, '#stat-sats')).toBe('500 sat');
      expect(await text(page, '#stat-fee')).toBe('1 sat');
      expect(await text(page, '#stat-wallet-label')).toMatch(/Owed to you/);
      expect(await tableRows(page, '#by-owner')).toEqual([[alice, '1', '500']]);
      expect(await page.$$eval('#recent tbody tr', (rows) => rows.length)).toBe(1);

      // CSV belongs to Pro: the 403 is explained, nothing is downloaded.
      let downloaded = false;
      page.once('download', () => (downloaded = true));
      await page.click('#csv');
      expect(await statusShows(page, /PRO_REQUIRED/)).toMatch(/Pro tier/);
      expect(downloaded).toBe(false);

      // Right to erasure: the wallet signs the page's second QR code, the page shows the counts and the login again.
      await page.click('#erase-start');
      const eraseLnurl = await shownLnurl(page, 'erase');
      expect(new URL(decodeLnurl(eraseLnurl)).searchParams.get('action')).toBe('auth');
      expect(await wallet.scan(eraseLnurl)).toEqual({ status: 200, body: { status: 'OK' } });
      await page.locator('#erased').waitFor({ state: 'visible' });
      expect(await text(page, '#erased')).toBe('Deleted 2 payment records, 1 linked addresses and 1 sessions.');
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.evaluate(() => sessionStorage.getItem('l402.dashboard.session'))).toBeNull();
      expect(await running.db.query('SELECT 1 FROM payments WHERE owner_address = $1', [alice])).toEqual([]);
      await page.close();
      expect(pageErrors).toEqual([]);
    });
  });
});
