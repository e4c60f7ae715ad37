import type { QueryType } from '../types';
import { DEFAULT_QUERY_TYPE, GENERATED_QUERY_TYPES, OptionSpec, QueryTypeSpec } from '../queryTypes.gen';

export type { OptionSpec, QueryTypeSpec };

/**
 * Every query type the backend serves, in picker order, with the backend's defaults as
 * placeholders: generated from the engine's registry (`go generate ./pkg/engine/specgen`).
 */
export const QUERY_TYPES: QueryTypeSpec[] = GENERATED_QUERY_TYPES;

export function queryTypeSpec(value: QueryType | undefined): QueryTypeSpec {
  const name = value ?? DEFAULT_QUERY_TYPE;
  return (
    QUERY_TYPES.find((t) => t.value === name) ?? QUERY_TYPES.find((t) => t.value === DEFAULT_QUERY_TYPE) ?? QUERY_TYPES[0]
  );
}
