// Checks a JSON answer against the response the OpenAPI document declares for
// its operation and status, at run time: the status must be declared, and the
// body must match the declared schema, with no property the schema does not
// declare. The generated types check the program; this checks the server.
// Handles the JSON Schema the document uses: $ref, allOf, anyOf, oneOf, type
// (one or a list), enum, const, properties, required, additionalProperties,
// items, and the uuid and date-time formats.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: unknown };

const isObject = (value: unknown): value is { [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const dateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export class Document {
  constructor(private readonly root: Schema) {}

  private resolve(schema: unknown): Schema {
    let current = schema;
    for (let hops = 0; isObject(current) && typeof current["$ref"] === "string"; hops++) {
      if (hops > 32) throw new Error("a $ref cycle in the document");
      const pointer = current["$ref"];
      if (!pointer.startsWith("#/")) throw new Error(`unsupported $ref ${pointer}`);
      let target: unknown = this.root;
      for (const part of pointer.slice(2).split("/")) {
        target = isObject(target) ? target[part.replaceAll("~1", "/").replaceAll("~0", "~")] : undefined;
      }
      if (target === undefined) throw new Error(`dangling $ref ${pointer}`);
      current = target;
    }
    if (current === true || current === undefined) return {};
    if (!isObject(current)) throw new Error(`not a schema: ${JSON.stringify(current)}`);
    return current;
  }

  /** The schema of the JSON answer `status` to `method path`, or the problem. */
  response(method: string, path: string, status: number): { schema: Schema } | { problem: string } {
    const item = isObject(this.root["paths"]) ? this.root["paths"][path] : undefined;
    const operation = isObject(item) ? item[method.toLowerCase()] : undefined;
    if (!isObject(operation)) return { problem: `${method} ${path} is not in the document` };
    const responses = isObject(operation["responses"]) ? operation["responses"] : {};
    const declared = responses[String(status)] ?? responses["default"];
    if (declared === undefined) {
      return { problem: `${method} ${path} answered ${status}, which the document does not declare (it declares ${Object.keys(responses).join(", ")})` };
    }
    const content = this.resolve(declared)["content"];
    const json = isObject(content) ? content["application/json"] : undefined;
    if (!isObject(json)) return { problem: `${method} ${path} ${status} declares no application/json content` };
    return { schema: this.resolve(json["schema"]) };
  }

  /** Every way `value` differs from `schema`; empty when it conforms. */
  check(value: Json, schema: unknown, at = "$"): string[] {
    const problems: string[] = [];
    this.walk(value, schema, at, problems, true);
    return problems;
  }

  /** The property names an object schema declares, through allOf. */
  private declared(schema: Schema): Set<string> | "any" {
    const names = new Set<string>();
    if (schema["additionalProperties"] !== undefined && schema["additionalProperties"] !== false) return "any";
    if (isObject(schema["properties"])) for (const name of Object.keys(schema["properties"])) names.add(name);
    if (Array.isArray(schema["allOf"])) {
      for (const part of schema["allOf"]) {
        const inner = this.declared(this.resolve(part));
        if (inner === "any") return "any";
        for (const name of inner) names.add(name);
      }
    }
    return names;
  }

  private walk(value: Json, raw: unknown, at: string, problems: string[], closed: boolean): void {
    const schema = this.resolve(raw);
    if (Array.isArray(schema["allOf"])) {
      for (const part of schema["allOf"]) this.walk(value, part, at, problems, false);
    }
    for (const keyword of ["anyOf", "oneOf"] as const) {
      const options = schema[keyword];
      if (!Array.isArray(options)) continue;
      const results = options.map((option) => this.check(value, option, at));
      const matching = results.filter((r) => r.length === 0).length;
      if (matching === 0 || (keyword === "oneOf" && matching > 1)) {
        problems.push(`${at}: matches ${matching} of the ${keyword} options: ${results.map((r) => r.join("; ")).join(" | ")}`);
      }
    }
    if ("const" in schema && JSON.stringify(schema["const"]) !== JSON.stringify(value)) {
      problems.push(`${at}: ${JSON.stringify(value)} is not the constant ${JSON.stringify(schema["const"])}`);
    }
    if (Array.isArray(schema["enum"]) && !schema["enum"].some((e) => JSON.stringify(e) === JSON.stringify(value))) {
      problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema["enum"])}`);
    }
    const types = schema["type"] === undefined ? [] : Array.isArray(schema["type"]) ? schema["type"] : [schema["type"]];
    const actual =
      value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "number" && Number.isInteger(value) ? "integer" : typeof value;
    if (types.length > 0 && !types.some((t) => t === actual || (t === "number" && actual === "integer"))) {
      problems.push(`${at}: a ${actual} (${JSON.stringify(value)}) where the document says ${types.join(" or ")}`);
      return;
    }
    if (typeof value === "string") {
      if (schema["format"] === "uuid" && !uuid.test(value)) problems.push(`${at}: ${JSON.stringify(value)} is not a uuid`);
      if (schema["format"] === "date-time" && !dateTime.test(value)) problems.push(`${at}: ${JSON.stringify(value)} is not a date-time`);
    }
    if (Array.isArray(value)) {
      if (schema["items"] !== undefined) value.forEach((item, i) => this.walk(item, schema["items"], `${at}[${i}]`, problems, true));
      return;
    }
    if (!isObject(value)) return;
    const properties = isObject(schema["properties"]) ? schema["properties"] : {};
    if (Array.isArray(schema["required"])) {
      for (const name of schema["required"]) {
        if (typeof name === "string" && !(name in value)) problems.push(`${at}: required property ${name} is missing`);
      }
    }
    for (const [name, inner] of Object.entries(value)) {
      if (name in properties) this.walk(inner, properties[name], `${at}.${name}`, problems, true);
      else if (isObject(schema["additionalProperties"])) this.walk(inner, schema["additionalProperties"], `${at}.${name}`, problems, true);
    }
    if (closed && (schema["type"] === "object" || "properties" in schema || "allOf" in schema)) {
      const declared = this.declared(schema);
      if (declared !== "any" && (declared.size > 0 || schema["additionalProperties"] === false)) {
        for (const name of Object.keys(value)) {
          if (!declared.has(name)) problems.push(`${at}: property ${name} (${JSON.stringify(value[name])}) is not in the document`);
        }
      }
    }
  }
}
