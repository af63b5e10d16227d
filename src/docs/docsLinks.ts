/**
 * Where the guides live for someone reading a message of this package: docs/ is not in the published package
 * (it would double its size), so messages link to the repository's pages, which exist wherever the user is.
 * package.json's `homepage` and `repository` name the same repository (test/docsLinks.test.ts checks it).
 */
export const DOCS_BASE_URL = 'https://github.com/bullmq-throttle/bullmq-throttle/blob/main/docs/';

/** A guide's address, e.g. docsUrl('redis.md') or docsUrl('redis.md', 'redis-acl'). */
export function docsUrl(page: string, anchor?: string): string {
  return `${DOCS_BASE_URL}${page}${anchor ? `#${anchor}` : ''}`;
}
