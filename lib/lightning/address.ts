// Lightning Address (LUD-16): user@domain, usernames a-z0-9-_. (lower case).
import { z } from 'zod';

export const LightningAddress = z
  .string()
  .trim()
  .max(320)
  .transform((s) => s.toLowerCase())
  .pipe(z.string().regex(/^[a-z0-9\-_.+]+@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}(?::\d{1,5})?$/, 'must be a Lightning Address like name@example.com'));
