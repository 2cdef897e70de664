import { badRequest } from '../../platform/errors.js';

/** Longest query text accepted: far above any hand-written analysis, far below the parser's own limit. */
export const SQL_MAX_QUERY_LENGTH = 20_000;

/** The tables a tenant's query may name (tenant-views.ts defines them). */
export const SQL_TABLES = ['traces', 'spans', 'metrics_1m'] as const;

/**
 * Scalar functions that read outside the query's tables (dictionaries, Join tables, settings,
 * server facts) or hold a worker for nothing. Table functions are refused by where they appear.
 * Lower case; a name matches case-insensitively.
 */
const REFUSED_FUNCTIONS = new Set([
  'joinget', 'joingetornull', 'hascolumnintable', 'getsetting', 'getsettingordefault', 'getserversetting', 'getmergetreesetting',
  'getmacro', 'getclienthttpheader', 'filesystemavailable', 'filesystemcapacity', 'filesystemunreserved', 'sleep', 'sleepeachrow',
  'currentuser', 'currentroles', 'enabledroles', 'defaultroles', 'currentprofiles', 'queryid', 'initialqueryid', 'initialquerystarttime',
  'hostname', 'fqdn', 'tcpport', 'uptime', 'buildid', 'serveruuid', 'getoskernelversion', 'zookeepersessionuptime', 'catboostevaluate',
  'evalmlmethod', 'generateserialid', 'transactionid', 'transactionlatestsnapshot', 'transactionoldestsnapshot', 'showcertificate',
  'connectionid', 'shardnum', 'shardcount', 'currentdatabase', 'currentschemas', 'displayname', 'globalvariable', 'input',
]);
const REFUSED_FUNCTION_PREFIXES = ['dict', '_'];

/** `x IN name` reads the table (or set) `name`: only `IN (SELECT …)` and `IN (values)` are accepted. */
const IN_FUNCTIONS = new Set(['in', 'notin', 'globalin', 'globalnotin', 'nullin', 'notnullin', 'globalnullin', 'globalnotnullin']);

const refused = (reason: string) => badRequest('sql.refused', `query refused: ${reason}`, { reason });

/**
 * Checks on the text before the engine sees it. chDB runs every statement of a multi-statement
 * text, even under EXPLAIN: a `;` anywhere but at the very end is refused before anything is parsed.
 * Returns the text without its trailing `;`.
 */
export function checkQueryText(query: string): string {
  if (query.length > SQL_MAX_QUERY_LENGTH) {
    throw badRequest('sql.query_too_long', `query is ${query.length} characters; at most ${SQL_MAX_QUERY_LENGTH} are accepted`);
  }
  const text = query.trim().replace(/;\s*$/, '');
  if (text.length === 0) throw refused('the query is empty');
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) throw refused('control characters other than tab and line breaks');
  if (text.includes(';')) throw refused("one statement only: ';' may only end the query (write char(59) for a semicolon in a string)");
  return text;
}

interface AstNode {
  depth: number;
  kind: string;
  /** What follows the kind on its line: a name, a literal, `(children n)`, `(alias a)`. */
  rest: string;
}

/** EXPLAIN AST prints one node per line, indented one space per level. */
function parseAst(ast: string): AstNode[] {
  return ast
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => {
      const body = line.trimStart();
      const space = body.indexOf(' ');
      return { depth: line.length - body.length, kind: space < 0 ? body : body.slice(0, space), rest: space < 0 ? '' : body.slice(space + 1) };
    });
}

/** The name a node prints before `(children …)` / `(alias …)`. */
const nodeName = (node: AstNode): string => node.rest.replace(/\s*\((children \d+|alias [^)]*)\)/g, '').trim();

/**
 * Refuses a parsed query that could read anything but the tenant's tables, change settings, or
 * write: `ast` is ClickHouse's own EXPLAIN AST of the text (a parse, nothing is executed), so the
 * checks see the query as the engine will, whatever its comments, quoting or case.
 * `otherTables` are the tables of the service's database besides SQL_TABLES: an unqualified name
 * that is none of those is a CTE of the query (or unknown to the engine).
 */
export function checkQueryAst(ast: string, otherTables: ReadonlySet<string>): void {
  const nodes = parseAst(ast);
  const root = nodes[0];
  if (!root || root.kind !== 'SelectWithUnionQuery') throw refused('only a SELECT query is accepted');
  if (!/\(children 1\)/.test(root.rest)) throw refused('FORMAT and INTO OUTFILE are not accepted: choose the format with the format field');
  const ancestors: AstNode[] = [];
  nodes.forEach((node, i) => {
    while (ancestors.length > 0 && ancestors[ancestors.length - 1]!.depth >= node.depth) ancestors.pop();
    checkNode(node, ancestors[ancestors.length - 1], otherTables, nodes, i);
    ancestors.push(node);
  });
}

function checkNode(node: AstNode, parent: AstNode | undefined, otherTables: ReadonlySet<string>, nodes: AstNode[], i: number): void {
  const name = nodeName(node);
  switch (node.kind) {
    case 'Set':
    case 'SetQuery':
      throw refused('SETTINGS are not accepted: the limits are fixed by the service');
    case 'TableIdentifier':
      if (name.includes('.')) throw refused(`only the tables ${SQL_TABLES.join(', ')} can be read, not ${name} (no database may be named)`);
      if (otherTables.has(name)) throw refused(`only the tables ${SQL_TABLES.join(', ')} can be read, not ${name}`);
      return;
    case 'Function':
      if (parent?.kind === 'TableExpression') throw refused(`table functions such as ${name}() are not accepted: read ${SQL_TABLES.join(', ')}`);
      checkFunction(name, nodes, i);
  }
}

function checkFunction(name: string, nodes: AstNode[], i: number): void {
  const lower = name.toLowerCase();
  if (REFUSED_FUNCTIONS.has(lower) || REFUSED_FUNCTION_PREFIXES.some((p) => lower.startsWith(p))) {
    throw refused(`the function ${name} is not accepted`);
  }
  if (IN_FUNCTIONS.has(lower)) {
    // Function in → ExpressionList → [left, right]: the right operand is the second child at depth +2.
    const depth = nodes[i]!.depth + 2;
    const operands: AstNode[] = [];
    for (let j = i + 2; j < nodes.length && nodes[j]!.depth >= depth; j += 1) if (nodes[j]!.depth === depth) operands.push(nodes[j]!);
    if (operands[1]?.kind === 'Identifier') throw refused(`${name} with a table name (${nodeName(operands[1])}) is not accepted: write IN (SELECT …)`);
  }
}
