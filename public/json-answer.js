// What both pages (landing.js, dashboard.js) make of an answer's body: the
// JSON it says it carries, or null (no JSON, or JSON that does not parse).
// Never throws: the pages turn every answer into {ok, status, data, error}.

export async function jsonBody(response) {
  if (!(response.headers.get('content-type') ?? '').includes('json')) return null;
  try {
    return await response.json();
  } catch {
    return null;
  }
}
