// CSV export of the payments a login may see (GET /api/stats?format=csv):
// Pro owners and admins, oldest payment first, streamed in batches, every
// field made safe for spreadsheets.
import { HttpError } from '../../http/errors.js';
import type { Queryable } from '../../db/types.js';
import type { Login } from '../accounts/auth.js';
import type { ServiceContext } from '../context.js';
import { statsView } from './stats.js';
import { pageOfPayments, toRecord, type Cursor, type PaymentRecord, type StatsScope } from './stats-queries.js';

const CSV_BATCH = 5_000;

export const CSV_COLUMNS = ['id', 'endpoint', 'payment_hash', 'amount_sats', 'owner_address', 'paid_at'] as const;

export interface CsvExport {
  filename: string;
  /** UTF-8 CSV (RFC 4180, CRLF), oldest payment first, streamed in batches. */
  body: ReadableStream<Uint8Array>;
}

/** Every visible payment as CSV; 403 PRO_REQUIRED for free owners. */
export async function statsCsvFor(ctx: ServiceContext, login: Login, options: { now?: Date } = {}): Promise<CsvExport> {
  const db = await ctx.database();
  const view = await statsView(db, login, options.now);
  if (view.tier === 'free') {
    throw new HttpError(
      403,
      'PRO_REQUIRED',
      'CSV export belongs to the Pro tier: activate Pro for one of your linked Lightning Addresses (GET /api/dev-token?address=...)',
    );
  }
  return { filename: `payments-${view.now.toISOString().slice(0, 10)}.csv`, body: await paymentsCsv(db, view) };
}

/**
 * The scope's payments as a CSV stream. The first batch is read before this
 * resolves, so a database that is down is a 503, not a truncated download.
 */
export async function paymentsCsv(db: Queryable, scope: StatsScope, batch = CSV_BATCH): Promise<ReadableStream<Uint8Array>> {
  const encoder = new TextEncoder();
  const readPage = async (after?: Cursor) => {
    const sql = pageOfPayments(scope, { newestFirst: false, limit: batch, after });
    return db.query(sql.text, sql.params);
  };
  let page: Array<Record<string, unknown>> | null = await readPage();
  let header = true;
  return new ReadableStream<Uint8Array>({
    // Every pull enqueues or closes: a pull that did neither would leave the reader waiting forever.
    async pull(controller) {
      const rows = page ?? [];
      const lines = rows.map((row) => csvLine(csvFields(toRecord(row))));
      if (header) lines.unshift(csvLine([...CSV_COLUMNS]));
      header = false;
      if (lines.length > 0) controller.enqueue(encoder.encode(lines.join('')));
      const last = rows.at(-1);
      page = rows.length === batch && last ? await readPage({ paidAt: String(last.cursor_at), id: String(last.id) }) : null;
      if (page === null || page.length === 0) controller.close();
    },
  });
}

function csvFields(record: PaymentRecord): string[] {
  return CSV_COLUMNS.map((column) => {
    const value = record[column];
    return value === null ? '' : String(value);
  });
}

/** One RFC 4180 line. */
export function csvLine(fields: string[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

/**
 * Quotes what needs quoting (comma, quote, CR, LF). A formula trigger (=, +,
 * -, @) gets an apostrophe right before it wherever a spreadsheet may start a
 * cell: at the start, and after a separator, quote or line break inside the
 * field, since a ";" locale or a tab split starts cells there; and past any
 * whitespace or control characters there, which spreadsheets trim before
 * reading a formula ("\t=1+1" -> "\t'=1+1") (OWASP "CSV injection"):
 * endpoints are chosen by third parties.
 */
export function csvField(value: string): string {
  const safe = value.replace(/(^|[,;\t\r\n"])([\s\u0000-\u001f\u007f-\u009f]*)(?=[=+\-@])/g, "$1$2'");
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}
