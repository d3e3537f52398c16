/* core/schema.h — JSON Schema (draft 2020-12 core subset) validation of structured output. */
#ifndef EVOLVE_CORE_SCHEMA_H
#define EVOLVE_CORE_SCHEMA_H

#include <jansson.h>

/* Validates `instance` against `schema`. Supported keywords: type, properties, required,
 * additionalProperties, items, prefixItems, enum, const, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, multipleOf, minLength, maxLength (in code points), pattern (ECMA-style
 * classes \d \w \s translated to POSIX ERE), minItems, maxItems, uniqueItems, minProperties,
 * maxProperties, allOf, anyOf, oneOf, not, $ref to "#" JSON pointers (e.g. "#/$defs/x") and
 * boolean schemas. Unknown keywords are ignored, as the specification requires.
 * Returns 0; EVOLVE_EINVAL when the instance fails, the message naming the JSON pointer that
 * failed ("/items/0/name: expected string, got integer"); EVOLVE_EINVAL with a message starting
 * "schema" when the schema itself is malformed (bad regex, unresolvable $ref); EVOLVE_ENOMEM.
 * @thread any (no shared state) */
int core_schema_validate(const json_t *schema, const json_t *instance);

#endif
