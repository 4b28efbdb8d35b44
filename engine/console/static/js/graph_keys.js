// The keys of the graph's nodes (GET .../graph), built from resource names as the server
// builds them: engine/services/stack_graph.py key_segment owns the rule, and this module
// is its one copy in the console. A name is one segment with "%" and "/" percent-encoded
// (Kiln's resource names may hold a "/"); a child stack's resource is
// "{parent key}/{segment}".

const SEPARATOR = "/";

/** A resource name as one segment of a key. */
export function keySegment(name) {
  return name.replaceAll("%", "%25").replaceAll(SEPARATOR, "%2F");
}

/** The key of resource `name` in the stack owned by `parentKey` (null: the top stack). */
export function nodeKey(name, parentKey = null) {
  const segment = keySegment(name);
  return parentKey === null ? segment : `${parentKey}${SEPARATOR}${segment}`;
}
