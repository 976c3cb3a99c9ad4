// Reading the project's Markdown the way GitHub renders it: fenced code
// blocks, inline links and heading anchors. Used by the tests that keep the
// documentation true (tests/unit/readme-snippets.test.ts, doc-links.test.ts).

export interface CodeBlock {
  /** The fence's info string, e.g. `ts` or `sh`. */
  lang: string;
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The nearest heading above the block, for messages. */
  heading: string;
}

export interface Link {
  target: string;
  line: number;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/;

/** Every fenced code block, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const opening = FENCE.exec(line);
    if (!opening) {
      const title = /^#{1,6}\s+(.*)$/.exec(line);
      if (title) heading = title[1]!.trim();
      continue;
    }
    const fence = opening[2]!;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (lines[j]!.trim().startsWith(fence[0]!.repeat(fence.length)) && lines[j]!.trim().replace(/[`~]/g, '') === '') break;
      body.push(lines[j]!);
    }
    blocks.push({ lang: opening[3] ?? '', code: `${body.join('\n')}\n`, line: i + 1, heading });
    i = j;
  }
  return blocks;
}

/** The Markdown outside fenced code blocks (blank lines in their place), and without inline code spans unless asked. */
function prose(markdown: string, keepInlineCode = false): string[] {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  return lines.map((line) => {
    const opening = FENCE.exec(line);
    if (fence) {
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') fence = undefined;
      return '';
    }
    if (opening) {
      fence = opening[2]!;
      return '';
    }
    return keepInlineCode ? line : line.replace(/(`+)[^`]*?\1/g, '');
  });
}

/** Inline links `[text](target)` and images, outside code. */
export function links(markdown: string): Link[] {
  const found: Link[] = [];
  prose(markdown).forEach((line, index) => {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push({ target: match[1]!, line: index + 1 });
  });
  return found;
}

/** The anchors GitHub gives a file's headings (`## Token format` is `#token-format`; repeats get -1, -2, …). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown, true)) {
    const title = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!title) continue;
    const slug = title[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\s-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}
