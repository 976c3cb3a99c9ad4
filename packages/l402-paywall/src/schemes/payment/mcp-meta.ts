// The names the Payment scheme's JSON-RPC transport (draft-payment-transport-mcp-00)
// gives its parts, one definition for the selling side (adapters/mcp-tool-wire.ts)
// and the paying side (client/mcp-payment.ts): were they spelled twice, a typo in
// one would make our own client and our own tools miss each other silently.

/** Where a call carries its credential: `params._meta[CREDENTIAL_META_KEY]` (or the message's root `_meta`). */
export const CREDENTIAL_META_KEY = 'org.paymentauth/credential';
/** Where a paid result carries its receipt: `result._meta[RECEIPT_META_KEY]`. */
export const RECEIPT_META_KEY = 'org.paymentauth/receipt';
/** mppx's other form of a payment-required answer: a tool result carrying the challenges in its `_meta`. */
export const PAYMENT_REQUIRED_META_KEY = 'org.paymentauth/payment-required';

/** JSON-RPC error: payment required (no credential sent); `data.challenges` holds fresh challenges. */
export const PAYMENT_REQUIRED_CODE = -32042;
/** JSON-RPC error: the credential sent failed verification; `data.challenges` holds fresh challenges. */
export const PAYMENT_VERIFICATION_FAILED_CODE = -32043;
