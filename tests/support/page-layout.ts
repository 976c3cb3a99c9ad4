// Layout checks for the page tests (tests/e2e/landing.test.ts,
// dashboard.test.ts), run inside the browser on what it laid out: nothing a
// visitor should read is cut off or pushes the page sideways.
import type { Page } from 'playwright-core';

/**
 * What on `page`, as laid out now, is cut off or sticks out; [] when nothing is.
 * - Every visible <pre> shows all of its text: its lines fit its box (they
 *   wrap), and the box lies within its panel (the nearest `.panel`, else
 *   <main>). A box that scrolls sideways is not enough: phones and macOS show
 *   no scroll bar until one scrolls, so a line that runs under the edge reads
 *   as cut off mid-line (issue 27).
 * - No visible element reaches past the viewport's right edge, unless it sits
 *   inside a box that scrolls sideways (a wide table in its scroller), which
 *   must itself fit.
 * Each problem is one line naming the element, for the assertion's message.
 */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const viewportWidth = document.documentElement.clientWidth;
    // Half a pixel: sub-pixel layout rounds either way.
    const SLACK = 0.5;
    const describe = (element: Element) => {
      const id = element.id ? `#${element.id}` : '';
      const classes = element.classList.length ? `.${Array.from(element.classList).join('.')}` : '';
      const text = (element.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
      return `<${element.tagName.toLowerCase()}${id}${classes}> "${text}"`;
    };
    const visible = (element: Element) => {
      const rect = element.getBoundingClientRect();
      return rect.width > 0 && rect.height > 0 && getComputedStyle(element).visibility !== 'hidden';
    };
    const scrollsSideways = (element: Element) => ['auto', 'scroll'].includes(getComputedStyle(element).overflowX);

    for (const pre of document.querySelectorAll('pre')) {
      if (!visible(pre)) continue;
      if (pre.scrollWidth > pre.clientWidth + SLACK) {
        problems.push(`${describe(pre)}: its text is ${pre.scrollWidth}px wide in a ${pre.clientWidth}px box, the rest hidden`);
      }
      const box = pre.closest('.panel') ?? pre.closest('main');
      if (box) {
        const [inner, outer] = [pre.getBoundingClientRect(), box.getBoundingClientRect()];
        if (inner.left < outer.left - SLACK || inner.right > outer.right + SLACK) {
          problems.push(
            `${describe(pre)}: spans ${Math.round(inner.left)}-${Math.round(inner.right)}px, outside its panel (${Math.round(outer.left)}-${Math.round(outer.right)}px)`,
          );
        }
      }
    }

    if (document.documentElement.scrollWidth > viewportWidth + SLACK) {
      problems.push(`the page is ${document.documentElement.scrollWidth}px wide in a ${viewportWidth}px viewport`);
    }
    for (const element of document.body.querySelectorAll('*')) {
      if (!visible(element) || element.getBoundingClientRect().right <= viewportWidth + SLACK) continue;
      // Inside a sideways scroller, only the scroller has to fit (it is checked on its own).
      let scroller = element.parentElement;
      while (scroller && scroller !== document.body && !scrollsSideways(scroller)) scroller = scroller.parentElement;
      if (scroller && scroller !== document.body) continue;
      problems.push(`${describe(element)}: reaches ${Math.round(element.getBoundingClientRect().right)}px, past the ${viewportWidth}px viewport`);
    }
    return problems;
  });
}
