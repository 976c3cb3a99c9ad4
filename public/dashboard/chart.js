// @ts-check
// "Sats per day": one bar per UTC day, drawn by uPlot (public/vendor/, the npm
// package's own file). uPlot spaces the date labels by the room it has, so
// they never overlap, from one day to years of them; bars are at most
// MAX_BAR_PX wide, so a single day is a bar, not a block. Pointing at a bar
// shows its day, sats and payments in the legend under the chart; dragging
// across zooms in, a double click zooms out.
//
// uPlot is loaded when the first chart is drawn, not with the page: the
// login does not need its 140 KB, and should it fail to load, the rest of the
// dashboard still works and the chart's box says why.
import { formatCount, formatSats, isCount } from './format.js';

/** @typedef {import('../json-answer.js').Unchecked<import('../../lib/service/records/stats-queries.js').CountAndSats>} UncheckedDay */
/** @typedef {typeof import('../vendor/uPlot-1.6.32.esm.js').default} UPlot */

// Times are in milliseconds (uPlot's `ms: 1`). In its default unit, seconds, uPlot
// widens the range of a single point to a thousand days instead of one.
const DAY = 86_400_000;
const HEIGHT = 240;
const MAX_BAR_PX = 40;
// The server names the days; however far back a day it names, the chart spans at most these many (ten years), the latest.
export const MAX_DAYS = 3653;
const DAY_KEY = /^\d{4}-\d{2}-\d{2}$/;

// Tick spacings uPlot may choose from: days, weeks, then months and years, which it
// recognises by these exact lengths (30 and 365 days) and puts on the 1st of a month.
const X_INCREMENTS = [1, 2, 3, 7, 14, 30, 60, 90, 180, 365, 730, 1825, 3650].map((days) => days * DAY);
// The labels for those spacings, in uPlot's table form: from this spacing up, this
// label, and below it on a second line the year, when the year changes.
/** @type {(string | number | null)[][]} */
const X_LABELS = [
  [365 * DAY, '{YYYY}', null, null, null, null, null, null, 1],
  [28 * DAY, '{MMM}', '\n{YYYY}', null, null, null, null, null, 1],
  [DAY, '{MMM} {D}', '\n{YYYY}', null, null, null, null, null, 1],
];
// Whole sats only on the value axis: 1, 2, 5, 10, 20, 50...
const Y_INCREMENTS = Array.from({ length: 16 }, (_, exponent) => [1, 2, 5].map((step) => step * 10 ** exponent)).flat();

// Its own canvas: measuring on the chart's would change the font uPlot thinks it has set there.
const measuring = document.createElement('canvas').getContext('2d');
const dayFormat = new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
/** @param {number} time a UTC day's midnight, in milliseconds */
const dayLabel = (time) => dayFormat.format(time);

/** @param {number} count */
const payments = (count) => `${formatCount(count)} ${count === 1 ? 'payment' : 'payments'}`;

/** @type {Promise<UPlot> | undefined} */
let loadingUPlot;

/** @returns {Promise<UPlot>} */
function loadUPlot() {
  if (!loadingUPlot) {
    giveUPlotALanguageIntlAccepts();
    loadingUPlot = import('../vendor/uPlot-1.6.32.esm.js').then(
      (module) => module.default,
      (error) => {
        loadingUPlot = undefined; // the next drawing tries again
        throw error;
      },
    );
  }
  return loadingUPlot;
}

/**
 * uPlot 1.6.32 makes an Intl.NumberFormat for navigator.language as its
 * module loads, and a browser on a Linux system with the C (POSIX) locale
 * reports "en-US@posix", which Intl refuses: the import throws (uPlot issue
 * 1053, fixed upstream after 1.6.32). This page writes its numbers in en-US
 * whatever the language, so such a tag is replaced, for this page, by the
 * part Intl accepts, or by en-US.
 */
function giveUPlotALanguageIntlAccepts() {
  const accepted = (/** @type {string} */ tag) => {
    try {
      return Intl.NumberFormat.supportedLocalesOf(tag).length > 0;
    } catch {
      return false;
    }
  };
  if (accepted(navigator.language)) return;
  const stem = navigator.language.split('@')[0] ?? '';
  Object.defineProperty(navigator, 'language', { value: accepted(stem) ? stem : 'en-US', configurable: true });
}

/**
 * @typedef {object} DailySeries one entry per UTC day, oldest first
 * @property {number[]} times each day's midnight (UTC), in milliseconds
 * @property {number[]} sats
 * @property {number[]} counts payments
 */

/**
 * Every UTC day from the first with payments to the later of the last one
 * and the day the stats were made (so the chart ends today), at most
 * MAX_DAYS of them; days without payments as zeros, so every bar is one day
 * wide. Keys that are not YYYY-MM-DD days and values that are not whole
 * numbers are left out.
 * @param {Readonly<Record<string, unknown>>} byDay
 * @param {unknown} generatedAt when the stats were made (ISO 8601)
 * @returns {DailySeries}
 */
export function dailySeries(byDay, generatedAt) {
  const days = Object.keys(byDay)
    .filter((day) => DAY_KEY.test(day) && !Number.isNaN(Date.parse(day)))
    .sort();
  const series = { times: /** @type {number[]} */ ([]), sats: /** @type {number[]} */ ([]), counts: /** @type {number[]} */ ([]) };
  if (days.length === 0) return series;
  const madeOn = typeof generatedAt === 'string' ? Date.parse(generatedAt.slice(0, 10)) : Number.NaN;
  const last = Math.max(Date.parse(/** @type {string} */ (days.at(-1))), Number.isNaN(madeOn) ? 0 : madeOn);
  const first = Math.max(Date.parse(/** @type {string} */ (days[0])), last - (MAX_DAYS - 1) * DAY);
  for (let time = first; time <= last; time += DAY) {
    const entry = byDay[new Date(time).toISOString().slice(0, 10)];
    /** @type {UncheckedDay} */
    const day = typeof entry === 'object' && entry !== null ? entry : {};
    series.times.push(time);
    series.sats.push(isCount(day.sats) && day.sats > 0 ? day.sats : 0);
    series.counts.push(isCount(day.count) && day.count > 0 ? day.count : 0);
  }
  return series;
}

/** @type {WeakMap<HTMLElement, () => void>} */
const erasers = new WeakMap();

/**
 * Draws `series` into `container`, replacing what was drawn there before,
 * and keeps it fitted to the container's width and to the colour scheme.
 * Never throws: a chart that cannot be drawn says so in its box.
 * @param {HTMLElement} container
 * @param {DailySeries} series
 */
export async function drawSatsPerDay(container, series) {
  container.setAttribute('aria-label', describe(series));
  if (series.times.length === 0) return showInChart(container, 'No payments in this period.');
  let uPlot;
  try {
    uPlot = await loadUPlot();
  } catch (error) {
    return showInChart(
      container,
      `The chart could not be loaded (${error instanceof Error ? error.message : String(error)}); the tables below have the figures.`,
    );
  }
  // Whatever an earlier call drew while this one waited goes: the last call wins.
  erase(container);
  const chart = new uPlot(chartOptions(uPlot, container, series), [series.times, series.sats], container);
  const resize = new ResizeObserver(() => {
    if (container.clientWidth > 0 && container.clientWidth !== chart.width) chart.setSize({ width: container.clientWidth, height: HEIGHT });
  });
  resize.observe(container);
  // The colours come from the page's stylesheet, which has a dark scheme: draw again when it changes.
  const darkScheme = window.matchMedia('(prefers-color-scheme: dark)');
  const redraw = () => drawSatsPerDay(container, series);
  darkScheme.addEventListener('change', redraw);
  erasers.set(container, () => {
    resize.disconnect();
    darkScheme.removeEventListener('change', redraw);
    chart.destroy();
  });
}

/** @param {HTMLElement} container */
function erase(container) {
  erasers.get(container)?.();
  erasers.delete(container);
  container.replaceChildren();
}

/**
 * @param {HTMLElement} container
 * @param {string} message
 */
function showInChart(container, message) {
  erase(container);
  const text = document.createElement('p');
  text.className = 'empty';
  text.textContent = message;
  container.append(text);
}

/**
 * The chart in one sentence, for screen readers (the canvas says nothing).
 * @param {DailySeries} series
 */
function describe(series) {
  if (series.times.length === 0) return 'Sats per day: no payments in this period.';
  const total = series.sats.reduce((sum, sats) => sum + sats, 0);
  const most = Math.max(...series.sats);
  const mostOn = series.times[series.sats.indexOf(most)] ?? 0;
  const [first, last] = [series.times[0] ?? 0, series.times.at(-1) ?? 0].map(dayLabel);
  return `Sats per day (UTC), ${first} to ${last}: ${formatSats(total)} in all; the most in a day ${formatSats(most)}, on ${dayLabel(mostOn)}.`;
}

/**
 * @param {UPlot} uPlot
 * @param {HTMLElement} container
 * @param {DailySeries} series
 * @returns {import('../vendor/uPlot-1.6.32.esm.js').default.Options}
 */
function chartOptions(uPlot, container, series) {
  const style = getComputedStyle(container);
  const colour = (/** @type {string} */ name) => style.getPropertyValue(name).trim();
  const font = `12px ${style.fontFamily}`;
  const axis = { stroke: colour('--muted'), font, ticks: { stroke: colour('--line'), width: 1, size: 6 } };
  const bars = uPlot.paths.bars;
  if (!bars) throw new Error('this uPlot build has no bar paths');
  return {
    width: container.clientWidth,
    height: HEIGHT,
    ms: 1,
    tzDate: (time) => uPlot.tzDate(new Date(time), 'Etc/UTC'),
    scales: {
      // Half a day of room on either side, so the first and last bars are whole.
      x: { time: true, range: (_chart, min, max) => [min - DAY / 2, max + DAY / 2] },
      // From zero, with a tenth of room above the tallest bar.
      y: { range: (_chart, _min, max) => [0, Math.max(max, 1) * 1.1] },
    },
    axes: [
      { ...axis, space: 72, incrs: X_INCREMENTS, values: X_LABELS, grid: { show: false } },
      {
        ...axis,
        space: 36,
        incrs: Y_INCREMENTS,
        values: (_chart, ticks) => ticks.map(formatCount),
        // The labels, the ticks (6 px) and uPlot's gap between them (5 px), with a little room to spare.
        size: (_chart, labels) => widestLabel(font, labels) + 6 + 5 + 4,
        grid: { stroke: colour('--line'), width: 1 },
      },
    ],
    series: [
      { label: 'Day', value: (_chart, time) => (time == null ? '–' : dayLabel(time)) },
      {
        label: 'Sats',
        fill: colour('--accent'),
        stroke: colour('--accent'),
        width: 0,
        paths: bars({ size: [0.7, MAX_BAR_PX, 1], align: 0 }),
        points: { show: false },
        value: (_chart, sats, _series, index) => (index == null ? '–' : `${formatSats(sats)} · ${payments(series.counts[index] ?? 0)}`),
      },
    ],
    legend: { live: true },
    cursor: { drag: { x: true, y: false }, points: { show: false } },
  };
}

/**
 * How wide the longest of `labels` is, in CSS pixels: the value axis is made
 * that wide, since sats run to millions and a fixed width would cut their
 * first digits off.
 * @param {string} font
 * @param {string[] | null | undefined} labels
 */
function widestLabel(font, labels) {
  if (!measuring || !labels?.length) return 40;
  measuring.font = font;
  return Math.ceil(Math.max(...labels.map((label) => measuring.measureText(label).width)));
}
