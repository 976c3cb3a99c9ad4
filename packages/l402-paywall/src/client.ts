// `l402-paywall/client`: paying L402 and Payment (MPP, Lightning charge) APIs from programs, agents and browsers.
// Edge-safe (Web APIs, @noble, @scure; the backends' wallets add zod).
export { fetchWithL402 } from './client/fetch.js';
export { getL402Receipt, getPaymentReceipt } from './client/receipts.js';
export type { L402Receipt, PaymentReceipt, ServerReceipt } from './client/receipts.js';
export type { FetchWithL402Options, PayInvoiceArgs, PaymentScheme, ReceivedInvoice, Wallet } from './client/options.js';
export type { Fetch } from './http/fetch-type.js';
export { createBudget } from './client/budget.js';
export { createSessions } from './client/sessions.js';
export type { ClientSessions, ClientSessionsOptions, ClosedSession, HeldSession, SessionPayment } from './client/sessions.js';
export type { Budget, BudgetOptions, BudgetReservation, Spending } from './client/budget.js';
export { AmountlessInvoiceUnsupported, DestinationRefused, L402ClientError, PAYMENT_ERROR_CODES, REFUSAL_CODES } from './client/errors.js';
export type { L402ClientErrorCode, L402ErrorDetails, PaymentErrorCode, RefusalCode } from './client/errors.js';
export { l402Challenges, paymentCharges } from './client/challenge.js';
export type { PaymentCharges } from './client/challenge.js';
export { parseAuthenticate } from './http/authenticate.js';
export type { RawChallenge } from './http/authenticate.js';
export type { L402Challenge } from './client/challenge.js';
export { createTokenStore } from './client/tokens.js';
export type { StoredCredential, TokenStore } from './client/tokens.js';
export { blinkWallet, clnWallet, devWallet, lnbitsWallet, lndWallet, phoenixdWallet, providerWallet, weblnWallet } from './client/wallets.js';
export type { DevWalletOptions, LnbitsWalletOptions, ProviderWalletOptions, WebLNProvider } from './client/wallets.js';
export type { Network } from './lightning/bolt11.js';
export type { ClientEventOptions } from './events/client.js';
export type { DestinationPolicy } from './client/destinations.js';
export { classifyAddress, classifyHost, ipv6Bytes } from './http/address-kind.js';
export type { AddressKind } from './http/address-kind.js';
export { mcpToolClient, McpToolError, McpTransportError } from './client/mcp-tools.js';
export type { McpToolClient, McpToolsOptions, PaidTool, PaidToolResult, ToolPaymentReceipt, ToolPrice } from './client/mcp-tools.js';
