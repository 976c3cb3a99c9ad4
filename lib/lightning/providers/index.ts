// The provider factory: config.lightning -> the LightningProvider it names.
// lib/config.ts has already refused a chosen backend with missing settings;
// the checks here only guard callers that build a config by hand.
import type { LightningConfig } from '../../config.js';
import type { KeyValueStore } from '../../store/types.js';
import { createBlinkProvider, createClnProvider, createDevNode, createLnbitsProvider, createLndProvider, createPhoenixdProvider } from 'l402-paywall/backends';
import { ProviderConfigError, type LightningProvider } from 'l402-paywall/lightning';
import { fetchTrustingCa } from 'l402-paywall/node';
import { createNwcProvider } from 'l402-paywall/nwc';

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
      return createLndProvider({ ...lnd, network, timeoutMs, ...(tlsCert ? { fetch: fetchTrustingCa(tlsCert) } : {}) });
    }
    case 'cln':
      return createClnProvider({ ...settings(config.cln, 'CLN_REST_URL, CLN_RUNE'), network, timeoutMs });
    case 'nwc':
      return createNwcProvider({ url: settings(config.nwc, 'NWC_URL').url, network, timeoutMs });
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
