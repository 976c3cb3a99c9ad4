/**
 * Both challenge forms of docs/architecture.md "Interoperability": the bare-token
 * form and the standard key=value form (macaroon before invoice for strict
 * parsers, token and version for the current spec).
 */
export function challengeHeaders(macaroon: string, invoice: string): string[] {
  return [`L402 ${macaroon}, invoice="${invoice}"`, `L402 macaroon="${macaroon}", invoice="${invoice}", token="${macaroon}", version="0"`];
}
