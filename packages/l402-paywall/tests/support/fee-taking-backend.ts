// A Lightning backend for the refund-fee tests of sessions.
import type { DevNode } from 'l402-paywall/backends';
import type { LightningProvider } from 'l402-paywall/lightning';

/**
 * A backend that routes the refund through the client's own channel, which
 * collects the whole fee limit: the refund is paid by the server's dev node,
 * and the fee moves from the server's node to the client's (the earner).
 */
export function feeTakingBackend(server: DevNode, earner: DevNode) {
  const fees: number[] = [];
  const provider: LightningProvider = {
    ...server,
    name: 'lnd',
    noRoutingFee: false,
    payAmountlessInvoice: async (request) => {
      const paid = await server.payAmountlessInvoice({ ...request, maxFeeMsat: 0 });
      fees.push(request.maxFeeMsat);
      if (request.maxFeeMsat > 0) await server.payInvoice({ invoice: (await earner.createInvoice({ amountMsat: request.maxFeeMsat })).invoice, maxFeeMsat: 0 });
      return { ...paid, feeMsat: request.maxFeeMsat };
    },
  };
  return { provider, fees };
}
