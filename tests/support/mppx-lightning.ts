// draft-lightning-charge's client side as an mppx method (mppx, a peer
// implementation we did not write, brings the protocol; this brings only the
// wallet): its credential carries the preimage `pay` got for the challenge's
// invoice. `counter.payments` counts the payments it made.
import { Credential, Method, z } from 'mppx';

export function mppxLightningCharge(pay: (invoice: string) => Promise<string>, counter: { payments: number } = { payments: 0 }) {
  const charge = Method.from({
    name: 'lightning',
    intent: 'charge',
    schema: {
      credential: { payload: z.object({ preimage: z.string() }) },
      request: z.object({ amount: z.string(), currency: z.string(), methodDetails: z.object({ invoice: z.string() }) }),
    },
  });
  return Method.toClient(charge, {
    async createCredential({ challenge }) {
      counter.payments++;
      return Credential.serialize({ challenge, payload: { preimage: await pay(challenge.request.methodDetails.invoice) } });
    },
  });
}
