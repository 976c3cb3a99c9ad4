// POST /api/provider-webhook (docs/architecture.md decision 8): the provider's signature
// is checked over the raw body before anything in it is parsed, then the
// payment is confirmed by looking it up at the provider, and only then does
// money move (lib/service/money/managed.ts). Deliveries are deduplicated by the
// ledger itself: every step is keyed on the payment hash, so a redelivered,
// concurrent or replayed event changes nothing.
import { HttpError } from '../../http/errors.js';
import { readRequestText } from '../../http/input.js';
import { WebhookRejected, type WebhookEvent } from 'l402-paywall/lightning';
import type { ServiceContext } from '../context.js';
import { confirmPayment, type ConfirmedPayment } from './managed.js';

/** Provider payment notifications are small; anything bigger is not one. */
export const WEBHOOK_BODY_LIMIT = 64 * 1024;

/** The verified event, or null for an authentic delivery about something else (an outgoing payment, say). */
export async function readProviderWebhook(ctx: ServiceContext, request: Request): Promise<WebhookEvent | null> {
  const readWebhook = ctx.provider.readWebhook?.bind(ctx.provider);
  if (!readWebhook) {
    throw new HttpError(
      501,
      'WEBHOOKS_UNSUPPORTED',
      `The configured Lightning provider (${ctx.provider.name}) sends no webhooks; payments are confirmed by the payouts cron`,
    );
  }
  let body: string;
  try {
    body = await readRequestText(request, { limit: WEBHOOK_BODY_LIMIT });
  } catch (error) {
    // Not UTF-8 cannot be what the provider signed; the signature check would fail anyway.
    if (error instanceof HttpError && error.code === 'INVALID_JSON') throw new HttpError(401, 'WEBHOOK_REJECTED', 'Webhook signature check failed');
    throw error;
  }
  try {
    return readWebhook({ headers: request.headers, body });
  } catch (error) {
    if (error instanceof WebhookRejected) {
      // The reason helps whoever configures the provider; it reveals no secret.
      console.error(`[webhook] rejected a delivery: ${error.message}`);
      throw new HttpError(401, 'WEBHOOK_REJECTED', 'Webhook signature check failed');
    }
    throw error;
  }
}

/** null: authentic but not about an incoming payment; acknowledged so the backend stops redelivering, nothing done. */
export async function handleProviderWebhook(ctx: ServiceContext, request: Request): Promise<ConfirmedPayment | null> {
  const event = await readProviderWebhook(ctx, request);
  if (!event) return null;
  if (!/^[0-9a-fA-F]{64}$/.test(event.paymentHash)) throw new HttpError(400, 'INVALID_WEBHOOK', 'The webhook names no valid payment hash');
  const confirmed = await confirmPayment(ctx, event.paymentHash, 'webhook');
  console.log(`[webhook] payment ${confirmed.paymentHash} of ${confirmed.amountMsat} msat confirmed${confirmed.managed ? '' : ' (no owner: logged only)'}`);
  return confirmed;
}
