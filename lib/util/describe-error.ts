/**
 * An error as one line for a log or a stored reason: its name, its SQLSTATE or
 * errno code when it has one, and its message, with URLs removed (they may
 * carry passwords or keys), at most 300 characters.
 */
export function describeError(error: unknown): string {
  let text = String(error);
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    text = `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${error.message}`;
  }
  return text
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>')
    .replace(/\s+/g, ' ')
    .slice(0, 300);
}
