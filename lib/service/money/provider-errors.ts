// What a failed call to the Lightning provider becomes at the HTTP boundary:
// always 503 with Retry-After (the request may succeed later), with a code
// that says whether waiting helps or the operator must fix a setting.
import { HttpError, retryLater } from '../../http/errors.js';
import { PROVIDER_RETRY_AFTER_SECONDS } from 'l402-paywall';
import { ProviderConfigError, ProviderUnsupported } from 'l402-paywall/lightning';

export function providerUnavailable(error: unknown): HttpError {
  console.error('[lightning] provider failed:', error instanceof Error ? error.message : error);
  if (error instanceof ProviderConfigError) {
    // Names the setting, never its value.
    return new HttpError(
      503,
      'PROVIDER_MISCONFIGURED',
      `The Lightning provider is misconfigured; the operator must check ${error.setting}`,
      { setting: error.setting, retryAfter: 60 },
      { 'Retry-After': '60' },
    );
  }
  // Asking again will not help (a fractional-sat amount on a sat-only backend, say).
  if (error instanceof ProviderUnsupported) return new HttpError(422, 'UNSUPPORTED_BY_PROVIDER', `The Lightning provider cannot do this: ${error.message}`);
  return retryLater(503, 'PROVIDER_UNAVAILABLE', 'Lightning provider temporarily unavailable; try again shortly', PROVIDER_RETRY_AFTER_SECONDS);
}
