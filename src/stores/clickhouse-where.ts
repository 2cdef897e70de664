/**
 * ClickHouse WHERE clauses that cannot forget the tenant.
 *
 * The only way to obtain a `TenantWhere` is `TenantWhere.forTenant(tenantId)`, and its SQL always
 * starts with `tenant_id = {tenant:UUID}`; conditions are appended after it with AND. Values enter
 * only as server-side `{name:Type}` parameters: a condition is a tagged template whose
 * interpolations must be `Bound` values made by `bind()`, so a request value cannot be spliced
 * into the SQL text by accident (the template's literal parts are code: column names, operators).
 */

const BOUND = Symbol('bound');

/** A value destined for a `{name:Type}` query parameter. */
export interface Bound {
  readonly [BOUND]: true;
  readonly type: string;
  readonly value: unknown;
}

/** `type` is a ClickHouse type written in code (`UInt64`, `DateTime64(3, 'UTC')`, `Array(UUID)`). */
export function bind(type: string, value: unknown): Bound {
  return { [BOUND]: true, type, value };
}

const PIECE = Symbol('piece');

/** SQL made by a TenantWhere of the same query (a subquery's WHERE clause), for use in a condition. */
export interface SqlPiece {
  readonly [PIECE]: true;
  readonly sql: string;
}

const isPiece = (part: unknown): part is SqlPiece => typeof part === 'object' && part !== null && (part as SqlPiece)[PIECE] === true;

/** Parameters of one query, shared by every WHERE clause built for it. */
interface ParamSet {
  values: Record<string, unknown>;
  counter: number;
}

export class TenantWhere {
  private readonly conditions: string[];

  private constructor(
    private readonly paramSet: ParamSet,
    qualifier: string,
  ) {
    this.conditions = [`${qualifier}tenant_id = {tenant:UUID}`];
  }

  /** `qualifier` is a table alias from code (`t.`) when the query joins tables. */
  static forTenant(tenantId: string, qualifier = ''): TenantWhere {
    return new TenantWhere({ values: { tenant: tenantId }, counter: 0 }, qualifier);
  }

  /** A WHERE clause for another table of the same query (a join's other side): same tenant, same parameters. */
  sibling(qualifier = ''): TenantWhere {
    return new TenantWhere(this.paramSet, qualifier);
  }

  /** Appends `AND (<condition>)`. */
  and(strings: TemplateStringsArray, ...bound: (Bound | SqlPiece)[]): this {
    this.conditions.push(`(${this.fragment(strings, ...bound)})`);
    return this;
  }

  /**
   * SQL text for another clause of the same query (HAVING, LIMIT) whose values share this
   * parameter set. Nothing is added to the WHERE clause.
   */
  fragment(strings: TemplateStringsArray, ...bound: (Bound | SqlPiece)[]): string {
    let sql = strings[0] ?? '';
    bound.forEach((b, i) => {
      if (isPiece(b)) {
        sql += `${b.sql}${strings[i + 1] ?? ''}`;
        return;
      }
      if (!b || b[BOUND] !== true) throw new TypeError('ClickHouse values must be bound parameters');
      const name = `p${this.paramSet.counter++}`;
      this.paramSet.values[name] = b.value;
      sql += `{${name}:${b.type}}${strings[i + 1] ?? ''}`;
    });
    return sql;
  }

  /** The WHERE condition, tenant first: `tenant_id = {tenant:UUID} AND (...) AND (...)`. */
  get sql(): string {
    return this.conditions.join(' AND ');
  }

  /** This clause as it stands, for a subquery inside a condition of a sibling (same tenant, same parameters). */
  get piece(): SqlPiece {
    return { [PIECE]: true, sql: this.sql };
  }

  get params(): Record<string, unknown> {
    return { ...this.paramSet.values };
  }
}

/** log_comment naming the query and the tenant, so a slow query in system.query_log is attributable. */
export const queryTag = (name: string, tenantId: string) => ({ log_comment: `${name} tenant=${tenantId}` });
