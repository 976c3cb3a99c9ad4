// @ts-check
// A page's elements by id, for both pages' scripts. Each page has every
// element its scripts use, so a missing id, or an element of another kind, is
// a bug, said at once.

/**
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {abstract new (...args: never[]) => T} [kind] the element's class, when the caller needs more than an HTMLElement (an input's value)
 * @returns {T}
 */
export function byId(id, kind) {
  const element = document.getElementById(id);
  const expected = kind ?? HTMLElement;
  if (!(element instanceof expected)) throw new Error(`${location.pathname} has no ${expected.name} #${id}`);
  return /** @type {T} */ (element);
}
