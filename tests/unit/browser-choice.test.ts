// Which Chromium the page tests drive (tests/support/browser.ts): the system's
// when installed, else the one npm brought; never none without saying why.
import { describe, expect, it } from 'vitest';
import { findChromium } from '../support/browser.js';

describe('findChromium', () => {
  it('L402_TEST_BROWSER=bundled uses the build shipped in @sparticuz/chromium, unpacked with its libraries and fonts', async () => {
    const chosen = await findChromium({ L402_TEST_BROWSER: 'bundled' });
    expect(chosen.source).toBe('bundled');
    expect(chosen.executablePath).toMatch(/node_modules\/\.cache\/l402-chromium\/[\d.]+\/chromium$/);
    expect(chosen.env.LD_LIBRARY_PATH).toMatch(/al2023\/lib$/);
    expect(chosen.env.FONTCONFIG_FILE).toMatch(/fonts\.conf$/);
  }, 120_000);

  it('CHROMIUM_PATH wins, and a wrong one is an error, not a skip', async () => {
    const bundled = await findChromium({ L402_TEST_BROWSER: 'bundled' });
    expect(await findChromium({ CHROMIUM_PATH: bundled.executablePath })).toEqual({ executablePath: bundled.executablePath, source: 'CHROMIUM_PATH', env: {} });
    await expect(findChromium({ CHROMIUM_PATH: '/nonexistent/chromium' })).rejects.toThrow(/not an executable file/);
  }, 120_000);
});
