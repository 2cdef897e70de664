import type { Ok } from '../api/client';
import type { paths } from '../api/schema';

/** Policies and model routes as the API gives and takes them (generated types, web/src/api/schema.d.ts). */
export type Policy = Ok<'/v1/policies'>['policies'][number];
export type ModelRoute = Ok<'/v1/model-routes'>['model_routes'][number];
export type PolicyBody = NonNullable<paths['/v1/policies']['post']['requestBody']>['content']['application/json'];
export type PolicyPatch = NonNullable<paths['/v1/policies/{id}']['patch']['requestBody']>['content']['application/json'];
export type PolicyTrigger = PolicyBody['trigger'];
export type PolicyStep = PolicyBody['steps'][number];
export type RouteBody = NonNullable<paths['/v1/model-routes']['post']['requestBody']>['content']['application/json'];
export type RoutePatch = NonNullable<paths['/v1/model-routes/{id}']['patch']['requestBody']>['content']['application/json'];
export type ModelRef = RouteBody['model'];
export type ModelProvider = ModelRef['provider'];

/** Every provider a model route may name (exhaustive over the generated enum). */
export const MODEL_PROVIDERS: Record<ModelProvider, string> = { openai: 'OpenAI', anthropic: 'Anthropic' };

/** JSON typed in a textarea, checked in the page before it is sent: the value, or why it is not one. */
export function parseJson(text: string, shape: 'object' | 'array'): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return new Error(err instanceof Error ? err.message : String(err));
  }
  if (shape === 'array') return Array.isArray(value) ? value : new Error('must be a JSON array');
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : new Error('must be a JSON object');
}

/** An array whose every item is a JSON object (steps, fallbacks); the API checks the rest. */
export function parseObjects(text: string): Record<string, unknown>[] | Error {
  const value = parseJson(text, 'array');
  if (value instanceof Error) return value;
  const items = value as unknown[];
  if (items.some((item) => item === null || typeof item !== 'object' || Array.isArray(item))) return new Error('every item must be a JSON object');
  return items as Record<string, unknown>[];
}

export const jsonText = (value: unknown): string => JSON.stringify(value, null, 2);
