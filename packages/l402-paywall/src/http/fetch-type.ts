/** A Web-standard fetch: what every part that sends requests takes, so callers may pass their own. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
