// @ts-check
// How the dashboard writes counts, amounts and times. Each takes a value as
// the server sent it (unknown until checked) and shows a dash for anything
// that is not what it should be, rather than "NaN" or a made-up zero.

const numberFormat = new Intl.NumberFormat('en-US');
const usdFormat = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const wholeUsdFormat = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 0 });

/**
 * @param {unknown} value
 * @returns {value is number} a whole number a count or an amount in sats can be
 */
export function isCount(value) {
  return Number.isSafeInteger(value);
}

/**
 * @param {unknown} value
 * @returns {value is number}
 */
export function isPositiveNumber(value) {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** @param {unknown} value */
export function formatCount(value) {
  return isCount(value) ? numberFormat.format(value) : '–';
}

/** @param {unknown} value */
export function formatSats(value) {
  return isCount(value) ? `${numberFormat.format(value)} sat` : '–';
}

/** @param {unknown} iso a time as ISO 8601 text */
export function formatTime(iso) {
  const time = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(time) ? '–' : new Date(time).toLocaleString();
}

/**
 * An amount in dollars reckoned from sats: "≈ $1.23".
 * @param {number} dollars
 */
export function formatApproximateUsd(dollars) {
  // Two decimals would round a few sats to "$0.00", which reads as nothing at all.
  return dollars > 0 && dollars < 0.005 ? '< $0.01' : `≈ ${usdFormat.format(dollars)}`;
}

/** @param {number} dollars a price, to the dollar */
export function formatWholeUsd(dollars) {
  return wholeUsdFormat.format(dollars);
}
