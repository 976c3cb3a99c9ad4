// The operators' dashboard (public/dashboard.html) in a real browser against
// the real local server. The test plays the phone wallet: it reads the LNURL
// the page shows, signs k1 with a real secp256k1 key and calls back, the way a
// wallet does after scanning the QR code. Then it checks what the page shows
// against payments seeded in the database.
//
// The browser is /usr/bin/chromium when installed, else the one npm brings
// (tests/support/browser.ts): never skipped.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../lib/db/index.js';
import { decodeLnurl } from '../../lib/lightning/lnurl.js';
import type { Stats } from '../../lib/service/records/stats.js';
import { testWallet } from '../support/lnurl-wallet.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../support/browser.js';
import { layoutProblems } from '../support/page-layout.js';

const DAY_MS = 86_400_000;
const TIMEOUT = { timeout: 90_000 };
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
const VIEWPORTS = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const;
// The accent colour (site.css --accent, #f7931a) as getComputedStyle writes it.
const ACCENT = 'rgb(247, 147, 26)';

// Real PostgreSQL when it answers (always in CI), else PGlite: the page is what is tested here.
const backends = await databaseBackends();
const backend = backends.find((b) => b.name === 'PostgreSQL' && b.skip === undefined) ?? backends.find((b) => b.name === 'PGlite')!;

const admin = testWallet();
const format = (n: number) => new Intl.NumberFormat('en-US').format(n);

const dayFormat = new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
/** A UTC day as the chart's legend names it: "Nov 27, 2026". */
const dayLabel = (time: number) => dayFormat.format(time);
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const payments = (count: number) => `${format(count)} ${count === 1 ? 'payment' : 'payments'}`;
const approximateUsd = (dollars: number) => (dollars > 0 && dollars < 0.005 ? '< $0.01' : `≈ ${usd.format(dollars)}`);

/** A stretch of the canvas's columns, in CSS pixels from its left edge. */
interface Span {
  left: number;
  width: number;
}

/** What the chart's canvas shows, read from its pixels (uPlot draws on a canvas: there is no DOM to query). */
interface ChartPicture {
  /** The plotting area (uPlot's .u-over box), in CSS pixels from the canvas's top left corner. */
  plot: { left: number; top: number; width: number; height: number };
  /** The bars, left to right: runs of drawn pixels along a row just above the plot's bottom. */
  bars: Span[];
  /** The date labels under the plot: drawn columns, grouped where less than 8 px apart (a label's own letters and spaces are closer). */
  labels: Span[];
  /** Whether anything is drawn in the canvas's first or last column: a label cut off at an edge. */
  drawnAtEdges: boolean;
}

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
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** A new tab (its own sessionStorage, so its own login) on the dashboard. */
  async function openDashboard(viewport: { width: number; height: number } = DESKTOP): Promise<Page> {
    const page = await browser!.context.newPage();
    await page.setViewportSize(viewport);
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

  /** Reads the chart off its canvas, once uPlot has drawn it. */
  async function chartPicture(page: Page): Promise<ChartPicture> {
    await page.locator('#by-day canvas').waitFor();
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    return page.evaluate(() => {
      const canvas = document.querySelector<HTMLCanvasElement>('#by-day canvas')!;
      const over = document.querySelector('#by-day .u-over')!.getBoundingClientRect();
      const box = canvas.getBoundingClientRect();
      const scale = canvas.width / box.width;
      const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      const drawn = (x: number, y: number) => pixels[(y * canvas.width + x) * 4 + 3]! > 0;
      const plot = { left: over.left - box.left, top: over.top - box.top, width: over.width, height: over.height };
      /** Runs of columns in [from, to) (canvas pixels) where `ink` holds, joined across gaps narrower than `joinGap`, in CSS pixels. */
      const runs = (from: number, to: number, ink: (x: number) => boolean, joinGap: number): Span[] => {
        const found: Span[] = [];
        let start = -1;
        let end = -1;
        for (let x = from; x < to; x++) {
          if (!ink(x)) continue;
          if (start >= 0 && x - end > joinGap) {
            found.push({ left: start / scale, width: (end - start + 1) / scale });
            start = -1;
          }
          if (start < 0) start = x;
          end = x;
        }
        if (start >= 0) found.push({ left: start / scale, width: (end - start + 1) / scale });
        return found;
      };
      const barRow = Math.round((plot.top + plot.height - 3) * scale);
      const bars = runs(Math.floor(plot.left * scale), Math.ceil((plot.left + plot.width) * scale), (x) => drawn(x, barRow), 1);
      // Below the plot and its 6 px ticks: the labels.
      const labelRows = Array.from({ length: canvas.height }, (_, y) => y).filter((y) => y > (plot.top + plot.height + 7) * scale);
      const labels = runs(0, canvas.width, (x) => labelRows.some((y) => drawn(x, y)), 8 * scale);
      const rows = Array.from({ length: canvas.height }, (_, y) => y);
      const drawnAtEdges = rows.some((y) => drawn(0, y) || drawn(canvas.width - 1, y));
      return { plot, bars, labels, drawnAtEdges };
    });
  }

  /** Points at the chart `x` CSS pixels from its left edge, low in the plot, and reads the legend under it: the day and its sats. */
  async function pointAt(page: Page, picture: ChartPicture, x: number): Promise<{ day: string; sats: string }> {
    const canvas = (await page.locator('#by-day canvas').boundingBox())!;
    await page.mouse.move(canvas.x + x, canvas.y + picture.plot.top + picture.plot.height - 4);
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
    const [day, sats] = await page.$$eval('#by-day .u-legend .u-series .u-value', (values) => values.map((value) => value.textContent ?? ''));
    return { day: day!, sats: sats! };
  }

  const middle = (span: Span) => span.left + span.width / 2;

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
    // BTC_PRICE_SOURCES=none: the simulated price the landing page's demo shows, named as such beside what it gives.
    expect(await text(page, '#stat-wallet-usd')).toBe(`${approximateUsd((walletSats / 1e8) * 100_000)} at a simulated price of $100,000 per BTC`);
    expect(await text(page, '#stat-trend-payments')).toBe(format(week.length));
    expect(await text(page, '#stat-trend-sats')).toBe(`${format(week.reduce((sum, row) => sum + row.amount_sats, 0))} sat`);

    expect(await tableRows(page, '#by-owner')).toEqual([
      ['shop@example.com', '3', '1,350'],
      ['blog@example.com', '1', '42'],
    ]);
    // The server's own answer: no prepaid session among these payments, said in words.
    expect(await text(page, '#sessions-none')).toBe('No prepaid sessions in this period.');
    expect(await page.locator('#sessions-detail').isHidden()).toBe(true);

    // A bar per UTC day, from the first payment's day to today (half a day of room either side):
    // pointing at each day with payments shows that day, its sats and its payments.
    const midnight = (time: number) => Date.parse(new Date(time).toISOString().slice(0, 10));
    const perDay = new Map<number, { sats: number; count: number }>();
    for (const row of seeded) {
      const day = perDay.get(midnight(row.paid_at.getTime())) ?? { sats: 0, count: 0 };
      perDay.set(midnight(row.paid_at.getTime()), { sats: day.sats + row.amount_sats, count: day.count + 1 });
    }
    const [firstDay, today] = [Math.min(...perDay.keys()), midnight(Date.now())];
    const picture = await chartPicture(page);
    for (const [day, { sats, count }] of perDay) {
      const x = picture.plot.left + ((day - firstDay + DAY_MS / 2) / (today - firstDay + DAY_MS)) * picture.plot.width;
      expect(await pointAt(page, picture, x)).toEqual({ day: dayLabel(day), sats: `${format(sats)} sat · ${payments(count)}` });
    }
    const tallest = Math.max(...[...perDay.values()].map((day) => day.sats));
    const tallestDay = [...perDay].find(([, day]) => day.sats === tallest)![0];
    expect(await page.getAttribute('#by-day', 'aria-label')).toBe(
      `Sats per day (UTC), ${dayLabel(firstDay)} to ${dayLabel(today)}: ${format(total)} sat in all; the most in a day ${format(tallest)} sat, on ${dayLabel(tallestDay)}.`,
    );

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

    // The login token is in sessionStorage only, and logging out revokes it on the server.
    const stored = await page.evaluate(() => ({ login: sessionStorage.getItem('l402.dashboard.login'), local: localStorage.length }));
    expect(stored.local).toBe(0);
    const token = (JSON.parse(stored.login!) as { token: string }).token;
    expect((await fetch(`${running.url}/api/login`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const before = (await page.locator('#login-link').getAttribute('data-lnurl')) ?? '';
    await page.click('#logout');
    await page.locator('#login').waitFor({ state: 'visible' });
    await shownLnurl(page, 'login', before);
    expect(await page.evaluate(() => sessionStorage.getItem('l402.dashboard.login'))).toBeNull();
    const after = await fetch(`${running.url}/api/login`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { code: string }).code).toBe('SESSION_REVOKED');
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  /** GET /api/stats's answer (the server's own type), made up for the page to draw: these days, this wallet, these payments. */
  function statsAnswer(byDay: Stats['byDay'], wallet: Pick<Stats, 'walletSats' | 'walletUsdCents' | 'btcPrice'>, recent: Stats['recent'] = []): Stats {
    const days = Object.values(byDay);
    const generatedAt = new Date().toISOString();
    return {
      totalPayments: days.reduce((sum, day) => sum + day.count, 0),
      totalSats: days.reduce((sum, day) => sum + day.sats, 0),
      serviceFee: 0,
      ...wallet,
      byOwner: {},
      byDay,
      trend: { payments7d: 0, sats7d: 0 },
      recent,
      sessions: {
        count: 0,
        units: 0,
        spentSats: 0,
        refunded: { count: 0, sats: 0 },
        owed: { count: 0, sats: 0 },
        givenUp: { count: 0, sats: 0 },
        topUpsRefused: { count: 0, sats: 0, unused: { count: 0, sats: 0 } },
      },
      scope: { tier: 'admin', addresses: null, since: null, generatedAt },
    };
  }

  /** The admin's dashboard, with every GET /api/stats answered by `stats`. */
  async function dashboardShowing(stats: Stats, viewport: { width: number; height: number }): Promise<Page> {
    const page = await openDashboard(viewport);
    await page.route('**/api/stats', (route) =>
      route.fulfill({ status: 200, contentType: 'application/json', headers: { 'cache-control': 'no-store' }, body: JSON.stringify(stats) }),
    );
    await logIn(page, admin);
    await statsShown(page);
    return page;
  }

  const shot = async (page: Page, name: string) => {
    await page.mouse.move(0, 0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
    await page.locator('#by-day').screenshot({ path: join(SCREENSHOT_DIR, `${name}-chart.png`) });
  };

  it(
    'draws one day of payments as one bar, not a block, and a thousand days as thin bars under dates that do not overlap, on a desktop and a phone',
    TIMEOUT,
    async () => {
      const today = Date.parse(new Date().toISOString().slice(0, 10));
      const day = (daysBack: number) => new Date(today - daysBack * DAY_MS).toISOString().slice(0, 10);
      const hostile = '<img src=x onerror="document.body.dataset.pwned=1">';
      const oneDay = statsAnswer(
        { [day(0)]: { count: 3, sats: 1350 } },
        { walletSats: 1234, walletUsdCents: null, btcPrice: { usd: 100_000, source: 'simulated', fetchedAt: new Date().toISOString() } },
        [{ id: randomUUID(), endpoint: hostile, payment_hash: 'ab'.repeat(32), amount_sats: 1350, owner_address: hostile, paid_at: new Date().toISOString() }],
      );
      // Every 20th day over a thousand, in the millions of sats (the value axis must fit "2,000,000").
      const thousandDays: Stats['byDay'] = {};
      for (const back of [...Array.from({ length: 50 }, (_, index) => index * 20), 999]) {
        thousandDays[day(back)] = { count: 1 + (back % 7), sats: 1_000_000 + ((back * 7919) % 900_000) };
      }
      const manyDays = statsAnswer(thousandDays, {
        walletSats: 12_345,
        walletUsdCents: 1197,
        btcPrice: { usd: 97_000, source: 'coinbase', fetchedAt: new Date().toISOString() },
      });

      for (const [name, viewport] of VIEWPORTS) {
        const page = await dashboardShowing(oneDay, viewport);
        let picture = await chartPicture(page);
        await shot(page, `dashboard-one-day-${name}`);
        expect(picture.bars, name).toHaveLength(1);
        const [bar] = picture.bars as [Span];
        expect(bar.width, name).toBeGreaterThanOrEqual(8);
        expect(bar.width, name).toBeLessThanOrEqual(41);
        expect(Math.abs(middle(bar) - (picture.plot.left + picture.plot.width / 2)), `${name}: the bar is centred`).toBeLessThanOrEqual(2);
        expect(await pointAt(page, picture, middle(bar))).toEqual({ day: dayLabel(today), sats: '1,350 sat · 3 payments' });
        expect(picture.labels.length, name).toBeGreaterThanOrEqual(1);
        for (const label of picture.labels) expect(label.width, `${name}: one date label, not several run together`).toBeLessThanOrEqual(64);
        expect(picture.drawnAtEdges, `${name}: a label cut off at the chart's edge`).toBe(false);
        // The simulated price is named beside the dollars it gives: 1,234 sat at $100,000 per BTC.
        expect(await text(page, '#stat-wallet-usd')).toBe('≈ $1.23 at a simulated price of $100,000 per BTC');
        // Server text is shown as text: the "image" is characters, and nothing ran.
        expect(await page.$$eval('#recent td', (cells) => cells.map((cell) => cell.textContent))).toEqual(expect.arrayContaining([hostile]));
        expect(await page.locator('#recent img, #by-owner img').count()).toBe(0);
        expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
        expect(await layoutProblems(page), name).toEqual([]);
        await page.close();

        const many = await dashboardShowing(manyDays, viewport);
        picture = await chartPicture(many);
        await shot(many, `dashboard-1000-days-${name}`);
        expect(picture.bars, `${name}: one bar per day with payments, none merged`).toHaveLength(Object.keys(thousandDays).length);
        // A thousand days on a few hundred pixels: each bar as thin as its day, at least a pixel.
        for (const thin of picture.bars) expect(thin.width, name).toBeLessThanOrEqual(3);
        expect(await pointAt(many, picture, middle(picture.bars.at(-1)!))).toEqual({
          day: dayLabel(today),
          sats: `${format(thousandDays[day(0)]!.sats)} sat · ${payments(thousandDays[day(0)]!.count)}`,
        });
        expect(picture.labels.length, name).toBeGreaterThanOrEqual(2);
        for (const label of picture.labels) expect(label.width, `${name}: one date label, not several run together`).toBeLessThanOrEqual(64);
        expect(picture.drawnAtEdges, `${name}: a label cut off at the chart's edge`).toBe(false);
        // A live price: the server's own dollar figure, with the price and its source.
        expect(await text(many, '#stat-wallet-usd')).toBe('≈ $11.97 at $97,000 per BTC (coinbase)');
        expect(await layoutProblems(many), name).toEqual([]);
        await many.close();
      }
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'shows prepaid sessions: what they spent, refunds paid, owed and given up, top-ups refused after the refund started (those two in warnings), and that revenue is net of refunds; "none" without sessions',
    TIMEOUT,
    async () => {
      const today = new Date().toISOString().slice(0, 10);
      const wallet = { walletSats: 0, walletUsdCents: null, btcPrice: { usd: 100_000, source: 'simulated', fetchedAt: new Date().toISOString() } } as const;
      const noSessions = statsAnswer({ [today]: { count: 2, sats: 80 } }, wallet);
      const owedOnly: Stats = {
        ...noSessions,
        sessions: {
          count: 2,
          units: 26,
          spentSats: 26,
          refunded: { count: 0, sats: 0 },
          owed: { count: 1, sats: 14 },
          givenUp: { count: 0, sats: 0 },
          topUpsRefused: { count: 0, sats: 0, unused: { count: 0, sats: 0 } },
        },
      };
      // Numbers above a thousand, and each different, so a value in the wrong place or unformatted shows.
      const sessions: Stats['sessions'] = {
        count: 1_204,
        units: 58_311,
        spentSats: 61_907,
        refunded: { count: 977, sats: 12_480 },
        owed: { count: 31, sats: 2_045 },
        givenUp: { count: 3, sats: 1_310 },
        topUpsRefused: { count: 4, sats: 2_140, unused: { count: 1, sats: 1_020 } },
      };
      const withRefunds: Stats = { ...noSessions, sessions };

      const block = (page: Page) => page.getByRole('region', { name: 'Prepaid sessions' });
      const figures = (page: Page) =>
        page.$$eval('#sessions dl > div', (pairs) => pairs.map((pair) => [pair.querySelector('dt')?.textContent, pair.querySelector('dd')?.textContent]));
      const refundRows = (page: Page) => tableRows(page, '#session-refunds');
      const warning = (page: Page) => page.locator('#refunds-given-up-note');
      const look = (page: Page, selector: string) =>
        page.$eval(selector, (element) => ({ background: getComputedStyle(element).backgroundColor, weight: getComputedStyle(element).fontWeight }));
      /** The warning background (site.css --warn-bg) as the browser resolves it to a colour. */
      const warningBackground = (page: Page) =>
        page.evaluate(() => {
          const probe = document.createElement('div');
          probe.style.background = 'var(--warn-bg)';
          document.body.append(probe);
          const colour = getComputedStyle(probe).backgroundColor;
          probe.remove();
          return colour;
        });

      // No sessions in the period: the block says so in plain words, and shows no table of zeros.
      let page = await dashboardShowing(noSessions, DESKTOP);
      expect(await block(page).isVisible()).toBe(true);
      expect(await text(page, '#sessions-none')).toBe('No prepaid sessions in this period.');
      expect(await page.locator('#sessions-detail').isHidden()).toBe(true);
      await page.close();

      // Refunds owed but none given up: the figures and the table, no warning.
      page = await dashboardShowing(owedOnly, DESKTOP);
      expect(await page.locator('#sessions-none').isHidden()).toBe(true);
      expect(await figures(page)).toEqual([
        ['Sessions opened', '2'],
        ['Units spent', '26'],
        ['Sats spent', '26 sat'],
      ]);
      expect(await refundRows(page)).toEqual([
        ['Paid back', '0', '0'],
        ['Owed, still being retried', '1', '14'],
        ['Given up: to settle by hand', '0', '0'],
      ]);
      expect(await warning(page).isHidden()).toBe(true);
      expect(await page.locator('#topups-refused-note').isHidden()).toBe(true);
      expect(await look(page, '#refunds-given-up td:last-child')).not.toMatchObject({ background: await warningBackground(page) });
      await page.close();

      // Top-ups refused (their session's refund had started), each used since: said, without asking anyone to refund.
      page = await dashboardShowing(
        { ...owedOnly, sessions: { ...owedOnly.sessions, topUpsRefused: { count: 1, sats: 20, unused: { count: 0, sats: 0 } } } },
        DESKTOP,
      );
      expect(await text(page, '#topups-refused-note')).toBe(
        "1 top-up (20 sat) came after its session's refund had started and was not taken: the client can open a new session with its payment. It has been used since.",
      );
      await page.close();

      for (const [name, viewport] of VIEWPORTS) {
        page = await dashboardShowing(withRefunds, viewport);
        const region = block(page);
        // A heading names the region; the figures are a definition list and the refunds a table with row and column headers.
        expect(await region.getByRole('heading', { name: 'Prepaid sessions' }).isVisible()).toBe(true);
        expect(await region.getByRole('term').allTextContents()).toEqual(['Sessions opened', 'Units spent', 'Sats spent']);
        expect(await region.getByRole('columnheader').allTextContents()).toEqual(['Refunds', 'Sessions', 'Sats']);
        expect(await region.getByRole('rowheader').allTextContents()).toEqual(['Paid back', 'Owed, still being retried', 'Given up: to settle by hand']);
        expect(await figures(page)).toEqual([
          ['Sessions opened', '1,204'],
          ['Units spent', '58,311'],
          ['Sats spent', '61,907 sat'],
        ]);
        expect(await refundRows(page)).toEqual([
          ['Paid back', '977', '12,480'],
          ['Owed, still being retried', '31', '2,045'],
          ['Given up: to settle by hand', '3', '1,310'],
        ]);
        // Given up: said in words, for the operator to act on, and drawn in the warning's colours.
        expect(await warning(page).isVisible()).toBe(true);
        expect(await text(page, '#refunds-given-up-note')).toBe(
          "3 refunds (1,310 sat) could not be paid: every retry failed or the client's return invoice expired, and the service has stopped trying. " +
            "The money is still owed to the clients. Settle them by hand: the payment_sessions table lists each one (refund_state 'given-up') with its amount and the reason.",
        );
        // Top-ups refused after their session's refund had started: how many, and those no session has used since, in a warning too.
        expect(await text(page, '#topups-refused-note')).toBe(
          "4 top-ups (2,140 sat) came after their sessions' refunds had started and were not taken: the client can open a new session with each payment. " +
            '1 (1,020 sat) has not been used since: received, with nothing given for it. ' +
            'Refund it by hand if the client asks: the session_refused_topups table lists each one with its payment hash and session.',
        );
        const warnBackground = await warningBackground(page);
        expect(await look(page, '#refunds-given-up-note')).toMatchObject({ background: warnBackground });
        expect(await look(page, '#topups-refused-note')).toMatchObject({ background: warnBackground });
        expect(await look(page, '#refunds-given-up td:last-child')).toEqual({ background: warnBackground, weight: '700' });
        expect(await look(page, '#refunds-owed td:last-child')).not.toMatchObject({ background: warnBackground });
        expect((await text(page, '#sessions-net')).replace(/\s+/g, ' ')).toBe(
          'Revenue (sats received, the last 7 days, sats per day, by Lightning Address) is net of refunds: refunds paid back are taken off what was received. ' +
            'Refunds still owed or given up are not taken off.',
        );
        expect(await layoutProblems(page), name).toEqual([]);
        // Each number on one line: a phone's narrow columns must not break "12,480" into "12,48" and "0".
        const brokenNumbers = await page.$$eval('#sessions dd, #session-refunds td.num', (cells) =>
          cells
            .filter((cell) => {
              const range = document.createRange();
              range.selectNodeContents(cell);
              return range.getClientRects().length > 1;
            })
            .map((cell) => cell.textContent),
        );
        expect(brokenNumbers, name).toEqual([]);
        await shot(page, `dashboard-sessions-${name}`);
        // The sticky header would cover the block's top in a shot of the block alone. (Screenshot's `style`
        // option is an inline style sheet, which the page's Content-Security-Policy refuses.)
        await page.$eval('header.top', (header) => ((header as HTMLElement).style.position = 'static'));
        await region.screenshot({ path: join(SCREENSHOT_DIR, `dashboard-sessions-${name}-block.png`) });
        await page.emulateMedia({ colorScheme: 'dark' });
        await region.screenshot({ path: join(SCREENSHOT_DIR, `dashboard-sessions-${name}-block-dark.png`) });
        await page.close();
      }

      // An owner is told who settles refunds given up: the operator, not them.
      page = await dashboardShowing({ ...withRefunds, scope: { ...withRefunds.scope, tier: 'pro', addresses: ['shop@example.com'] } }, DESKTOP);
      expect(await text(page, '#refunds-given-up-note')).toMatch(/The money is still owed to the clients\. The service's operator settles them by hand\.$/);
      expect(await text(page, '#topups-refused-note')).toMatch(/nothing given for it\. The service's operator refunds it by hand if the client asks\.$/);
      await page.close();
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'is one design with the landing page: the same stylesheet and header, the logo linking home, the accent colour only on the primary action',
    TIMEOUT,
    async () => {
      const page = await openDashboard();
      await logIn(page, admin);
      await statsShown(page);
      const landing = await browser!.context.newPage();
      await landing.setViewportSize(DESKTOP);
      await landing.goto(`${running.url}/`);
      // Nothing hovered or focused: the styles compared are the resting ones.
      for (const tab of [page, landing]) {
        await tab.mouse.move(0, 0);
        await tab.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      }

      const design = (tab: Page) =>
        tab.evaluate(() => ({
          stylesheets: Array.from(document.styleSheets, (sheet) => new URL(sheet.href ?? '', location.href).pathname).filter((path) => path === '/site.css'),
          accent: getComputedStyle(document.documentElement).getPropertyValue('--accent').trim(),
          font: getComputedStyle(document.body).fontFamily,
          header: Array.from(document.querySelectorAll('header .nav-links a'), (link) => link.textContent),
        }));
      expect(await design(page)).toEqual(await design(landing));

      const brand = await page.$eval('header .brand', (link) => {
        const logo = link.querySelector('img');
        return {
          href: link.getAttribute('href'),
          text: link.textContent?.trim(),
          logo: logo?.getAttribute('src'),
          shown: !!logo?.complete && (logo?.naturalWidth ?? 0) > 0,
        };
      });
      expect(brand).toEqual({ href: '/', text: 'L402 paywall', logo: '/favicon.svg', shown: true });

      const buttons = await page.$$eval('#app button, #app a.button', (elements) =>
        elements
          .filter((element) => (element as HTMLElement).offsetParent !== null)
          .map((element) => ({
            text: element.textContent?.trim(),
            primary: element.classList.contains('primary'),
            background: getComputedStyle(element).backgroundColor,
          })),
      );
      expect(buttons.map((button) => button.text)).toEqual(['Refresh', 'Log out', 'Download CSV', 'Send the code', 'Delete my data…']);
      expect(buttons.filter((button) => button.primary).map((button) => button.text)).toEqual(['Send the code']);
      expect(buttons.filter((button) => button.background === ACCENT).map((button) => button.text)).toEqual(['Send the code']);

      // Secondary and primary buttons look as they do on the landing page.
      const look = (tab: Page, selector: string) =>
        tab.$eval(selector, (element) => {
          const style = getComputedStyle(element);
          return {
            background: style.backgroundColor,
            color: style.color,
            border: style.borderColor,
            radius: style.borderRadius,
            weight: style.fontWeight,
            minHeight: style.minHeight,
          };
        });
      expect(await look(page, '#refresh')).toEqual(await look(landing, '#use a.button'));
      expect(await look(page, '#link-start button[type=submit]')).toEqual(await look(landing, '#demo-buy'));
      // The one thing that cannot be undone is outlined in red, not filled with the accent.
      const erase = await look(page, '#erase-start');
      expect([erase.color, erase.border]).toEqual(['rgb(179, 38, 30)', 'rgb(179, 38, 30)']);
      expect(erase.background).not.toBe(ACCENT);

      await shot(page, 'dashboard-design-desktop');
      // The dark scheme: the chart is drawn again in its colours.
      await page.emulateMedia({ colorScheme: 'dark' });
      await chartPicture(page);
      await shot(page, 'dashboard-design-dark-desktop');
      await page.click('header .brand');
      await page.waitForURL(`${running.url}/`);
      await page.locator('.hero h1').waitFor();
      await landing.close();
      await page.close();
      expect(pageErrors).toEqual([]);
    },
  );

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
      expect(await text(page, '#erased')).toBe('Deleted 2 payment records, 1 linked addresses and 1 logins.');
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.evaluate(() => sessionStorage.getItem('l402.dashboard.login'))).toBeNull();
      expect(await running.db.query('SELECT 1 FROM payments WHERE owner_address = $1', [alice])).toEqual([]);
      await page.close();
      expect(pageErrors).toEqual([]);
    });
  });
});
