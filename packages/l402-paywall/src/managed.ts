// `l402-paywall/managed`: managed mode, no Lightning node: the hosted service
// issues the invoices and pays 99.7% to the operator's Lightning Address.
export { withL402, managedInvoiceProvider, ManagedServiceError } from './managed/managed.js';
export type { ManagedMode, ManagedL402Options, DirectoryRegistration } from './managed/managed.js';
