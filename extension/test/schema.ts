/**
 * A small JSON Schema validator for the keywords msdebug/views/status.schema.json uses
 * (pytest validates Python's messages against the same file with the jsonschema package).
 * A keyword it does not know is an error, never silently ignored: a schema that grows a
 * new keyword needs it here too.
 */

export type Schema = Record<string, unknown>;

const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'description', '$defs', '$comment']);
const KEYWORDS = new Set([
  'type',
  'const',
  'enum',
  'required',
  'properties',
  'additionalProperties',
  'minProperties',
  'oneOf',
  'items',
  '$ref'
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeOf(value: unknown): string[] {
  if (value === null) {
    return ['null'];
  }
  if (Array.isArray(value)) {
    return ['array'];
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? ['integer', 'number'] : ['number'];
  }
  return [typeof value];
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The schema a local `$ref` (`#/$defs/name`) points at. */
export function resolve(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#/')) {
    throw new Error(`only local $refs are supported, not ${ref}`);
  }
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    node = isObject(node) ? node[part] : undefined;
  }
  if (!isObject(node)) {
    throw new Error(`$ref ${ref} points at nothing`);
  }
  return node;
}

/** Every reason `value` breaks `schema` (empty when it is valid), each as `path: reason`. */
export function validate(value: unknown, schema: Schema, root: Schema = schema, path = ''): string[] {
  const where = path || '(message)';
  const problems: string[] = [];
  for (const [keyword, rule] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword)) {
      continue;
    }
    if (!KEYWORDS.has(keyword)) {
      throw new Error(`status.schema.json uses ${keyword}, which test/schema.ts does not know`);
    }
    if (keyword === '$ref') {
      problems.push(...validate(value, resolve(root, rule as string), root, path));
    } else if (keyword === 'type') {
      const allowed = Array.isArray(rule) ? (rule as string[]) : [rule as string];
      if (!typeOf(value).some(type => allowed.includes(type))) {
        problems.push(`${where}: ${JSON.stringify(value)} is not of type ${allowed.join(' or ')}`);
      }
    } else if (keyword === 'const') {
      if (!equal(value, rule)) {
        problems.push(`${where}: ${JSON.stringify(value)} is not ${JSON.stringify(rule)}`);
      }
    } else if (keyword === 'enum') {
      if (!(rule as unknown[]).some(option => equal(value, option))) {
        problems.push(`${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(rule)}`);
      }
    } else if (keyword === 'oneOf') {
      const passing = (rule as Schema[]).filter(option => validate(value, option, root, path).length === 0);
      if (passing.length !== 1) {
        problems.push(`${where}: matches ${passing.length} of the oneOf schemas, not exactly 1`);
      }
    } else if (keyword === 'items') {
      if (Array.isArray(value)) {
        value.forEach((item, index) => problems.push(...validate(item, rule as Schema, root, `${path}/${index}`)));
      }
    } else if (isObject(value)) {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      if (keyword === 'required') {
        for (const name of rule as string[]) {
          if (!(name in value)) {
            problems.push(`${where}: ${name} is missing`);
          }
        }
      } else if (keyword === 'properties') {
        for (const [name, sub] of Object.entries(properties)) {
          if (name in value) {
            problems.push(...validate(value[name], sub, root, `${path}/${name}`));
          }
        }
      } else if (keyword === 'additionalProperties') {
        for (const name of Object.keys(value).filter(name => !(name in properties))) {
          if (rule === false) {
            problems.push(`${where}: ${name} is not allowed`);
          } else if (isObject(rule)) {
            problems.push(...validate(value[name], rule, root, `${path}/${name}`));
          }
        }
      } else if (keyword === 'minProperties') {
        if (Object.keys(value).length < (rule as number)) {
          problems.push(`${where}: fewer than ${rule} properties`);
        }
      }
    }
  }
  return problems;
}
