// A request to the local server that fetch cannot make: from another loopback
// address (the server takes the client IP from the socket, so 127.0.0.2 is a
// second client), or with a Host header of the client's choosing.
import { request, type IncomingHttpHeaders } from 'node:http';

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The address the connection comes from, e.g. 127.0.0.2 (any 127.x.y.z is this machine). */
  from?: string;
}

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON. */
  body: Record<string, unknown>;
}

export function rawRequest(url: string, { method = 'GET', headers = {}, body, from }: RawRequest = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers, localAddress: from, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        try {
          resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> });
        } catch {
          reject(new Error(`${method} ${url} answered ${response.statusCode} with a body that is not JSON: ${text.slice(0, 200)}`));
        }
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
