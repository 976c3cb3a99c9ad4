// Requests that name another host in their Host header than the server they
// reach, as any client can (fetch sets Host itself, so these go through node:http).
import { request as httpRequest } from 'node:http';

export interface NamingHostInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Sends to `url` with `Host: <host>`; answers the status and the body as text. */
export function requestNamingHost(url: string, host: string, init: NamingHostInit = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(url, { method: init.method ?? 'GET', headers: { ...init.headers, host } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    sent.on('error', reject).end(init.body);
  });
}
