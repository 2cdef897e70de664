import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BEGIN, DOC, END, importsOf, moduleCycles, moduleGraph, renderModulesBlock, ROOT, type ModuleGraph } from '../../scripts/architecture.js';

const doc = () => readFileSync(DOC, 'utf8');
let built: ModuleGraph | undefined;
/** Parsing every module file takes a few seconds: once per run. */
const graph = () => (built ??= moduleGraph());

describe('docs/architecture.md', () => {
  it('shows the module graph the imports make (regenerate with `npm run docs:architecture`)', () => {
    const text = doc();
    const start = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    expect(start, 'the generated block\'s markers').toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const block = text.slice(start, end + END.length);
    expect(block, 'docs/architecture.md is stale: run `npm run docs:architecture` and commit the result').toBe(renderModulesBlock(graph()));
  });

  it('the modules import each other one way: no cycle', () => {
    const cycles = moduleCycles(graph());
    expect(cycles.map((c) => c.join(' <-> ')), 'modules that import each other, directly or through others').toEqual([]);
  });

  it('src/platform, src/stores and src/providers import no module', () => {
    const offending = ['src/platform', 'src/stores', 'src/providers'].flatMap((dir) =>
      readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile() && e.name.endsWith('.ts'))
        .flatMap((e) => {
          const file = path.join(e.parentPath, e.name);
          return importsOf(file, readFileSync(file, 'utf8'))
            .filter(({ specifier }) => specifier.startsWith('.') && path.resolve(path.dirname(file), specifier).startsWith(path.join(ROOT, 'src/modules') + path.sep))
            .map(({ specifier }) => `${path.relative(ROOT, file)} imports ${specifier}`);
        }),
    );
    expect(offending).toEqual([]);
  });

  it('every repository path it names exists (a moved file must be renamed in the doc too)', () => {
    const named = new Set(doc().match(/\b(?:src|sql|clickhouse|scripts|test|docs)\/[\w./-]*[\w/]/g) ?? []);
    expect(named.size).toBeGreaterThan(20);
    const missing = [...named].filter((p) => !existsSync(path.join(ROOT, p)));
    expect(missing, 'paths in docs/architecture.md that do not exist').toEqual([]);
  });
});

describe('scripts/architecture.ts', () => {
  it('finds a cycle and marks type-only dependencies', () => {
    const graph = {
      modules: ['a', 'b', 'c', 'd'],
      edges: [
        { from: 'a', to: 'b', typeOnly: false, imports: 1 },
        { from: 'b', to: 'c', typeOnly: true, imports: 1 },
        { from: 'c', to: 'a', typeOnly: false, imports: 2 },
        { from: 'c', to: 'd', typeOnly: false, imports: 1 },
      ],
    };
    expect(moduleCycles(graph)).toEqual([['a', 'b', 'c']]);
    expect(renderModulesBlock(graph)).toContain('  b -.-> c');
    expect(
      importsOf('x.ts', "import type { A } from './a.js';\nimport { type B, C } from './b.js';\nexport { type D } from './d.js';\nconst e = await import('./e.js');").map(
        (i) => `${i.specifier}:${i.typeOnly}`,
      ),
    ).toEqual(['./a.js:true', './b.js:false', './d.js:true', './e.js:false']);
  });
});
