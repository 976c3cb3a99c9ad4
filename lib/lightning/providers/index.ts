// The provider factory: config.lightning -> the LightningProvider it names.
// lib/config.ts has already refused a chosen backend with missing settings;
// the checks here only guard callers that build a config by hand.
//
// What only one backend needs is imported when that backend is first used,
// not when this module loads: NWC's client (l402-paywall/nwc, @getalby/sdk and
// its Nostr stack) and the Node fetch that trusts lnd's own certificate
// (l402-paywall/node). The fetch-based backends and the dev node share one
// small entry (l402-paywall/backends) and are imported as usual.
import type { LightningConfig } from '../../config.js';
import type { KeyValueStore } from '../../store/types.js';
import { createBlinkProvider, createClnProvider, createDevNode, createLnbitsProvider, createLndProvider, createPhoenixdProvider } from 'l402-paywall/backends';
import { ProviderConfigError, type LightningProvider } from 'l402-paywall/lightning';
import type { Fetch } from 'l402-paywall/client';
import { loadOnce } from '../../util/load-once.js';

export { ProviderConfigError, ProviderUnsupported } from 'l402-paywall/lightning';

/** `store` holds the dev node's invoices and balances; the real backends keep their own. */
export function createProvider(config: LightningConfig, store: KeyValueStore): LightningProvider {
  const { network, timeoutMs } = config;
  const settings = <T>(value: T | undefined, names: string): T => {
    if (!value) throw new ProviderConfigError(names, `LIGHTNING_PROVIDER=${config.provider} needs ${names}`);
    return value;
  };
  switch (config.provider) {
    case 'dev':
      if (!config.devNodePrivateKey) throw new ProviderConfigError('DEV_NODE_PRIVATE_KEY', 'The dev node needs DEV_NODE_PRIVATE_KEY');
      return createDevNode({ store, privateKey: config.devNodePrivateKey });
    case 'lnbits':
      return createLnbitsProvider({ ...settings(config.lnbits, 'LNBITS_URL, LNBITS_API_KEY'), network, timeoutMs });
    case 'phoenixd':
      return createPhoenixdProvider({ ...settings(config.phoenixd, 'PHOENIXD_URL, PHOENIXD_PASSWORD'), network, timeoutMs });
    case 'lnd': {
      const { tlsCert, ...lnd } = settings(config.lnd, 'LND_REST_URL, LND_MACAROON');
      return createLndProvider({ ...lnd, network, timeoutMs, ...(tlsCert ? { fetch: fetchTrustingCaOnFirstUse(tlsCert) } : {}) });
    }
    case 'cln':
      return createClnProvider({ ...settings(config.cln, 'CLN_REST_URL, CLN_RUNE'), network, timeoutMs });
    case 'nwc':
      return nwcOnFirstUse({ url: settings(config.nwc, 'NWC_URL').url, network, timeoutMs });
    case 'blink': {
      const blink = settings(config.blink, 'BLINK_API_KEY');
      return createBlinkProvider({
        apiKey: blink.apiKey,
        apiUrl: blink.apiUrl,
        network,
        timeoutMs,
        ...(blink.walletId ? { walletId: blink.walletId } : {}),
        ...(blink.webhookSecret ? { webhookSecret: blink.webhookSecret } : {}),
      });
    }
  }
}

/** l402-paywall/node's fetchTrustingCa(certificate), the module imported on the first request. */
function fetchTrustingCaOnFirstUse(certificate: string): Fetch {
  const trusting = loadOnce(async () => (await import('l402-paywall/node')).fetchTrustingCa(certificate));
  return async (input, init) => (await trusting())(input, init);
}

/**
 * The NWC provider with its client (@getalby/sdk) imported on the first call:
 * the same provider, built then. A connection URL that the client refuses
 * (ProviderConfigError) is reported by that first call, which the routes
 * answer 503 PROVIDER_MISCONFIGURED as they would have at start-up
 * (lib/service/money/provider-errors.ts). Optional methods are decided here,
 * before the provider exists: every one the NWC provider has must be forwarded
 * below (payAmountlessInvoice today; it sends no webhooks).
 */
function nwcOnFirstUse(options: { url: string; network: LightningConfig['network']; timeoutMs: number }): LightningProvider & { close(): void } {
  let built: Promise<LightningProvider & { close(): void }> | undefined;
  const provider = loadOnce(async () => (await import('l402-paywall/nwc')).createNwcProvider(options));
  const loaded = () => (built = provider());
  return {
    name: 'nwc',
    createInvoice: async (request) => (await loaded()).createInvoice(request),
    lookupInvoice: async (paymentHash) => (await loaded()).lookupInvoice(paymentHash),
    payInvoice: async (request) => (await loaded()).payInvoice(request),
    payAmountlessInvoice: async (request) => {
      const nwc = await loaded();
      if (!nwc.payAmountlessInvoice) throw new TypeError('the NWC provider pays no invoice without an amount');
      return nwc.payAmountlessInvoice(request);
    },
    lookupPayment: async (paymentHash) => (await loaded()).lookupPayment(paymentHash),
    balance: async () => (await loaded()).balance(),
    close() {
      // Nothing to close before the first call.
      built?.then((nwc) => nwc.close()).catch(() => {});
    },
  };
}
