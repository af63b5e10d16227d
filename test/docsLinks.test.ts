import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DOCS_BASE_URL } from '../src/docs/docsLinks';

const ROOT = join(__dirname, '..');

/** GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces as '-'. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []);
}

// Messages link to the repository's guides (docs/ is not in the package): each link must name a page and heading that exist.
describe('links from messages to the guides', () => {
  it('point into the repository package.json names', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { homepage: string; repository: { url: string } };
    const repo = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(DOCS_BASE_URL).toBe(`${repo}/blob/main/docs/`);
    expect(pkg.homepage.startsWith(repo)).toBe(true);
  });

  it('name pages and headings that exist in docs/', () => {
    const links = sourceFiles(join(ROOT, 'src')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/docsUrl\('([^']+)'(?:, '([^']+)')?\)/g)].map((m) => ({ file, page: m[1], anchor: m[2] })));
    expect(links.length).toBeGreaterThan(0);
    for (const { file, page, anchor } of links) {
      const text = readFileSync(join(ROOT, 'docs', page), 'utf8');
      if (anchor) {
        const anchors = [...text.matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]));
        expect({ file, page, anchor, found: anchors.includes(anchor) }).toEqual({ file, page, anchor, found: true });
      }
    }
  });

  it('README and docs/ link to pages and headings that exist', () => {
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    let checked = 0;
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const [, target, anchor] of text.matchAll(/\]\(((?!https?:)[^)#\s]+\.md)(?:#([^)\s]+))?\)/g)) {
        const path = join(ROOT, dirname(page), target);
        expect({ page, target, exists: existsSync(path) }).toEqual({ page, target, exists: true });
        if (anchor) {
          const anchors = [...readFileSync(path, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]));
          expect({ page, target, anchor, found: anchors.includes(anchor) }).toEqual({ page, target, anchor, found: true });
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});
