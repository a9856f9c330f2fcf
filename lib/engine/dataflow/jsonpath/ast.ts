/** The parsed form of a JSONPath expression as ASL uses it (Jayway-compatible subset). */

export type PathRoot =
  | { readonly kind: 'input' } // $
  | { readonly kind: 'context' } // $$
  | { readonly kind: 'variable'; readonly name: string } // $name
  | { readonly kind: 'current' }; // @ (inside filters)

export type Segment =
  | { readonly kind: 'property'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'wildcard' }
  | { readonly kind: 'slice'; readonly start?: number; readonly end?: number; readonly step?: number }
  | { readonly kind: 'union'; readonly keys: readonly (string | number)[] }
  | { readonly kind: 'filter'; readonly predicate: FilterExpression }
  | { readonly kind: 'descendants'; readonly step: Segment }
  | { readonly kind: 'function'; readonly name: 'length' | 'size' | 'min' | 'max' | 'avg' | 'sum' | 'keys' };

export type FilterExpression =
  | { readonly kind: 'path'; readonly path: ParsedPath }
  | { readonly kind: 'literal'; readonly value: unknown }
  | { readonly kind: 'regex'; readonly regex: RegExp }
  | { readonly kind: 'not'; readonly operand: FilterExpression }
  | { readonly kind: 'and' | 'or'; readonly left: FilterExpression; readonly right: FilterExpression }
  | {
      readonly kind: 'compare';
      readonly operator: '==' | '!=' | '<' | '<=' | '>' | '>=' | '=~' | 'in' | 'nin';
      readonly left: FilterExpression;
      readonly right: FilterExpression;
    };

export interface ParsedPath {
  readonly source: string;
  readonly root: PathRoot;
  readonly segments: readonly Segment[];
  /** Only properties and indexes: the path names at most one node (a "reference path" shape). */
  readonly definite: boolean;
}

/** Jayway's rendering of a path step, used in AWS's messages, e.g. `['a']`, `[0]`. */
export function segmentText(segment: Segment): string {
  switch (segment.kind) {
    case 'property':
      return `['${segment.name}']`;
    case 'index':
      return `[${segment.index}]`;
    case 'wildcard':
      return '[*]';
    case 'slice':
      return `[${segment.start ?? ''}:${segment.end ?? ''}${segment.step === undefined ? '' : `:${segment.step}`}]`;
    case 'union':
      return `[${segment.keys.map((k) => (typeof k === 'number' ? String(k) : `'${k}'`)).join(',')}]`;
    case 'filter':
      return '[?]';
    case 'descendants':
      return `..${segmentText(segment.step)}`;
    case 'function':
      return `.${segment.name}()`;
  }
}

export function rootText(root: PathRoot): string {
  switch (root.kind) {
    case 'input':
      return '$';
    case 'context':
      return '$$';
    case 'variable':
      return `$${root.name}`;
    case 'current':
      return '@';
  }
}

/** Jayway's canonical text of a whole path, e.g. `$['a']['b'][0]`. */
export function pathText(path: ParsedPath): string {
  return rootText(path.root) + path.segments.map(segmentText).join('');
}
