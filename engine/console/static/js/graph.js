// The stack page's dependency graph: a layered layout (pure, testable without a page) and
// the SVG view that draws it, pans, zooms, searches and answers the keyboard.
//
// Direction: left to right. A Heat stack is shallow and wide (a handful of dependency
// levels, up to hundreds of siblings in one), so its layers become columns and its big
// layers stack downwards, the way a page already scrolls; node labels (resource names,
// type names) are wide text that a fixed-width column holds, where top-to-bottom would put
// a hundred wide cards side by side.
//
// The layout (specs/console.rst, "Alternatives"): layers by longest path from the sources,
// order within a layer by barycentre sweeps, no dummy nodes (a long edge is a curve over
// the layers between), y by isotonic regression towards the neighbours. Nested stacks and
// groups of alike siblings are compound nodes: their visible members are laid out the same
// way, recursively, inside a box that is one (large) node of the level above.

/** Layout constants; any of them can be overridden through layout()'s options. */
export const DEFAULTS = Object.freeze({
  nodeWidth: 220,
  nodeHeight: 58,
  layerGap: 76,
  nodeGap: 16,
  boxPadding: 14,
  // Siblings with the same type, prerequisites and dependents are drawn as one "N × type"
  // node when there are more than this many; 0 never groups.
  groupThreshold: 25,
  sweeps: 4,
});

const CATEGORIES = ['failed', 'progress', 'init', 'deleted', 'complete']; // worst first
const GLYPHS = {complete: '✓', progress: '◐', failed: '✗', init: '○', deleted: '⊘'};
const WORDS = {
  complete: 'complete', progress: 'in progress', failed: 'failed', init: 'not created',
  deleted: 'deleted',
};

/** The drawing category of a node's action and status, and its Heat-style label. */
export function statusOf(node) {
  let action = String(node.action ?? '').toUpperCase();
  let status = String(node.status ?? '').toUpperCase();
  // Tolerate a Heat "resource_status" (CREATE_COMPLETE) in the status field.
  const joined = /^(.*)_(COMPLETE|FAILED|IN_PROGRESS)$/.exec(status);
  if (joined && !action) [, action, status] = joined;
  let category = 'init';
  if (status === 'FAILED') category = 'failed';
  else if (status === 'IN_PROGRESS') category = 'progress';
  else if (action === 'INIT') category = 'init';
  else if (action === 'DELETE') category = 'deleted';
  else if (status === 'COMPLETE') category = 'complete';
  const label = [action, status].filter(Boolean).join('_') || 'UNKNOWN';
  return {category, label};
}

// ---------------------------------------------------------------------------------------
// What is visible: collapsed nested stacks hide their resources, big alike sibling sets
// become group nodes.

function hashString(text) {
  let hash = 5381;
  for (let i = 0; i < text.length; i += 1) hash = ((hash * 33) ^ text.charCodeAt(i)) >>> 0;
  return hash.toString(36);
}

function asSet(value) {
  if (value instanceof Set) return value;
  return new Set(value ?? []);
}

/**
 * The visible graph for an expansion state: `nodes` are view nodes ({key, parent, kind:
 * 'resource'|'group', node?, members?, type, name, expandable, expanded, hidden}) where
 * `parent` is the visible container (an expanded nested stack or group, null at the top);
 * `edges` join siblings only; `owner` maps every resource key to the visible key that
 * shows it (itself, its group, or its collapsed ancestor).
 */
export function visibleGraph(nodes, edges, options = {}) {
  const expanded = asSet(options.expanded);
  const threshold = options.groupThreshold ?? DEFAULTS.groupThreshold;
  const byKey = new Map();
  for (const node of nodes) byKey.set(node.key, node);
  const stackOf = (node) => (node.parent != null && byKey.has(node.parent) ? node.parent : null);
  const children = new Map();
  for (const node of nodes) {
    const parent = stackOf(node);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(node);
  }
  const preds = new Map();
  const succs = new Map();
  for (const edge of edges) {
    const from = byKey.get(edge.from);
    const to = byKey.get(edge.to);
    if (!from || !to || from === to) continue;
    if (!succs.has(from.key)) succs.set(from.key, new Set());
    if (!preds.has(to.key)) preds.set(to.key, new Set());
    succs.get(from.key).add(to.key);
    preds.get(to.key).add(from.key);
  }

  const out = [];
  const vparent = new Map();
  const owner = new Map();
  const hide = (node, shownBy) => {
    owner.set(node.key, shownBy);
    for (const child of children.get(node.key) ?? []) hide(child, shownBy);
  };
  const countInside = (key) => {
    let count = 0;
    for (const child of children.get(key) ?? []) count += 1 + countInside(child.key);
    return count;
  };
  const emitResource = (node, container) => {
    const inside = countInside(node.key);
    const open = inside > 0 && expanded.has(node.key);
    out.push({
      key: node.key, parent: container, kind: 'resource', node, type: node.type,
      name: node.name ?? node.key, expandable: inside > 0, expanded: open, inside,
    });
    vparent.set(node.key, container);
    owner.set(node.key, node.key);
    if (open) visitLevel(children.get(node.key), node.key);
    else for (const child of children.get(node.key) ?? []) hide(child, node.key);
  };
  const visitLevel = (level, container) => {
    const bySignature = new Map();
    for (const node of level) {
      const signature = [
        node.type, [...(preds.get(node.key) ?? [])].sort().join('\u0001'),
        [...(succs.get(node.key) ?? [])].sort().join('\u0001'),
      ].join('\u0000');
      if (!bySignature.has(signature)) bySignature.set(signature, []);
      bySignature.get(signature).push(node);
    }
    const groupOf = new Map();
    for (const [signature, members] of bySignature) {
      if (threshold > 0 && members.length > threshold) {
        const type = members[0].type;
        const key = `group:${container ?? ''}:${type}:${hashString(signature)}`;
        for (const member of members) groupOf.set(member.key, {key, members});
      }
    }
    const emittedGroups = new Set();
    for (const node of level) {
      const group = groupOf.get(node.key);
      if (!group) {
        emitResource(node, container);
        continue;
      }
      if (emittedGroups.has(group.key)) continue;
      emittedGroups.add(group.key);
      const open = expanded.has(group.key);
      out.push({
        key: group.key, parent: container, kind: 'group', type: group.members[0].type,
        name: `${group.members.length} × ${group.members[0].type}`,
        members: group.members.map((member) => member.key), expandable: true,
        expanded: open, inside: group.members.length,
      });
      vparent.set(group.key, container);
      if (open) for (const member of group.members) emitResource(member, group.key);
      else for (const member of group.members) hide(member, group.key);
    }
  };
  visitLevel(children.get(null) ?? [], null);

  // An edge joins two resources of one stack; drawn between the siblings that show them
  // (a member of an open group is reached through its group's box).
  const visibleEdges = [];
  const seen = new Set();
  const representative = (key, level) => {
    let shown = owner.get(key);
    while (shown !== undefined && vparent.get(shown) !== level) {
      shown = vparent.get(shown) ?? undefined;
    }
    return shown;
  };
  for (const [fromKey, targets] of succs) {
    const level = stackOf(byKey.get(fromKey));
    for (const toKey of targets) {
      const from = representative(fromKey, level);
      const to = representative(toKey, level);
      if (from === undefined || to === undefined || from === to) continue;
      const id = `${from}\u0000${to}`;
      if (seen.has(id)) continue;
      seen.add(id);
      visibleEdges.push({from, to});
    }
  }
  return {nodes: out, edges: visibleEdges, owner};
}

// ---------------------------------------------------------------------------------------
// The layered layout of one level (the siblings of one container).

function longestPathLayers(keys, preds, succs) {
  const layer = new Map();
  const onStack = new Set();
  const visit = (key) => {
    if (layer.has(key)) return layer.get(key);
    onStack.add(key);
    let best = 0;
    for (const pred of preds.get(key)) {
      if (!onStack.has(pred)) best = Math.max(best, visit(pred) + 1); // a cycle's back edge
    }
    onStack.delete(key);
    layer.set(key, best);
    return best;
  };
  for (const key of keys) visit(key);
  // A source used only far to the right (a config read by the last resource) moves next
  // to its first dependent: shorter edges, the same left-to-right order.
  for (const key of keys) {
    if (preds.get(key).length || !succs.get(key).length) continue;
    const first = Math.min(...succs.get(key).map((succ) => layer.get(succ)));
    if (first - 1 > layer.get(key)) layer.set(key, first - 1);
  }
  return layer;
}

function countCrossings(layers, edges, layerOf) {
  // Each edge is a straight segment between normalised positions; a long edge is cut at
  // every layer it passes, as a dummy chain would be.
  const position = new Map();
  for (const layer of layers) {
    layer.forEach((key, index) => position.set(key, (index + 0.5) / layer.length));
  }
  let crossings = 0;
  for (let gap = 0; gap + 1 < layers.length; gap += 1) {
    const spans = [];
    for (const {from, to} of edges) {
      const a = layerOf.get(from);
      const b = layerOf.get(to);
      if (a > gap || b <= gap) continue;
      const p = position.get(from);
      const q = position.get(to);
      spans.push([p + ((q - p) * (gap - a)) / (b - a), p + ((q - p) * (gap + 1 - a)) / (b - a)]);
    }
    for (let i = 0; i < spans.length; i += 1) {
      for (let j = i + 1; j < spans.length; j += 1) {
        if ((spans[i][0] - spans[j][0]) * (spans[i][1] - spans[j][1]) < 0) crossings += 1;
      }
    }
  }
  return crossings;
}

function orderLayers(layers, preds, succs, layerOf, edges, sweeps) {
  const position = new Map();
  const measure = () => {
    for (const layer of layers) {
      layer.forEach((key, index) => position.set(key, (index + 0.5) / layer.length));
    }
  };
  const sortBy = (layer, neighbours) => {
    const score = new Map();
    for (const key of layer) {
      const around = neighbours.get(key);
      score.set(key, around.length
        ? around.reduce((sum, other) => sum + position.get(other), 0) / around.length
        : position.get(key));
    }
    const index = new Map(layer.map((key, i) => [key, i]));
    layer.sort((a, b) => score.get(a) - score.get(b) || index.get(a) - index.get(b));
  };
  let best = layers.map((layer) => [...layer]);
  let fewest = countCrossings(layers, edges, layerOf);
  for (let sweep = 0; sweep < sweeps && fewest > 0; sweep += 1) {
    measure();
    for (let i = 1; i < layers.length; i += 1) {
      sortBy(layers[i], preds);
      measure();
    }
    for (let i = layers.length - 2; i >= 0; i -= 1) {
      sortBy(layers[i], succs);
      measure();
    }
    const crossings = countCrossings(layers, edges, layerOf);
    if (crossings < fewest) {
      fewest = crossings;
      best = layers.map((layer) => [...layer]);
    }
  }
  return best;
}

// The tops closest (least squares) to `wanted` that keep the order and the gaps: isotonic
// regression of wanted[i] - offset[i] by pooling adjacent violators.
function placeInOrder(wanted, heights, gap) {
  const offsets = [];
  let offset = 0;
  for (const height of heights) {
    offsets.push(offset);
    offset += height + gap;
  }
  const blocks = [];
  wanted.forEach((value, i) => {
    blocks.push({sum: value - offsets[i], count: 1});
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1];
      const before = blocks[blocks.length - 2];
      if (before.sum / before.count <= last.sum / last.count) break;
      before.sum += last.sum;
      before.count += last.count;
      blocks.pop();
    }
  });
  const tops = [];
  for (const block of blocks) {
    for (let n = 0; n < block.count; n += 1) {
      tops.push(block.sum / block.count + offsets[tops.length]);
    }
  }
  return tops;
}

function layoutLevel(keys, edges, size, settings) {
  const preds = new Map(keys.map((key) => [key, []]));
  const succs = new Map(keys.map((key) => [key, []]));
  for (const {from, to} of edges) {
    succs.get(from).push(to);
    preds.get(to).push(from);
  }
  const layerOf = longestPathLayers(keys, preds, succs);
  const layerCount = keys.length ? Math.max(...layerOf.values()) + 1 : 0;
  let layers = Array.from({length: layerCount}, () => []);
  for (const key of keys) layers[layerOf.get(key)].push(key);
  layers = orderLayers(layers, preds, succs, layerOf, edges, settings.sweeps);

  const top = new Map();
  const centre = (key) => top.get(key) + size.get(key).height / 2;
  for (const layer of layers) {
    let y = 0;
    for (const key of layer) {
      top.set(key, y);
      y += size.get(key).height + settings.nodeGap;
    }
  }
  const pull = (layer, neighbours) => {
    const wanted = layer.map((key) => {
      const around = neighbours(key);
      if (!around.length) return top.get(key);
      const mean = around.reduce((sum, other) => sum + centre(other), 0) / around.length;
      return mean - size.get(key).height / 2;
    });
    const heights = layer.map((key) => size.get(key).height);
    placeInOrder(wanted, heights, settings.nodeGap).forEach((y, i) => top.set(layer[i], y));
  };
  for (let pass = 0; pass < 4; pass += 1) {
    for (let i = 1; i < layers.length; i += 1) pull(layers[i], (key) => preds.get(key));
    for (let i = layers.length - 2; i >= 0; i -= 1) pull(layers[i], (key) => succs.get(key));
  }
  for (const layer of layers) pull(layer, (key) => [...preds.get(key), ...succs.get(key)]);

  const minTop = keys.length ? Math.min(...top.values()) : 0;
  const positions = new Map();
  let x = 0;
  let height = 0;
  layers.forEach((layer, layerIndex) => {
    const width = Math.max(...layer.map((key) => size.get(key).width));
    layer.forEach((key, order) => {
      const y = Math.round(top.get(key) - minTop); // whole pixels: crisp borders
      positions.set(key, {x, y, layer: layerIndex, order});
      height = Math.max(height, y + size.get(key).height);
    });
    x += width + settings.layerGap;
  });
  return {positions, width: layers.length ? x - settings.layerGap : 0, height};
}

/**
 * Lays out the graph of GET .../graph: `nodes` and `edges` as there. Options: `expanded`
 * (keys of nested stacks and groups shown open; none by default), any of DEFAULTS.
 * Returns {positions: Map<key, {x, y, width, height, layer, order, parent, depth}>, width,
 * height, nodes, edges, owner}: positions of the visible nodes (resources and groups) in
 * absolute coordinates, top-left corners; `layer` and `order` count among the node's
 * siblings in its container (`parent`: the open nested stack or group around it, null at
 * the top); `nodes`, `edges` and `owner` are visibleGraph()'s.
 */
export function layout(nodes, edges, options = {}) {
  const settings = {...DEFAULTS, ...options};
  const visible = visibleGraph(nodes, edges, settings);
  const inContainer = new Map();
  for (const vnode of visible.nodes) {
    if (!inContainer.has(vnode.parent)) inContainer.set(vnode.parent, []);
    inContainer.get(vnode.parent).push(vnode);
  }
  const edgesIn = new Map();
  const parentOf = new Map(visible.nodes.map((vnode) => [vnode.key, vnode.parent]));
  for (const edge of visible.edges) {
    const container = parentOf.get(edge.from);
    if (!edgesIn.has(container)) edgesIn.set(container, []);
    edgesIn.get(container).push(edge);
  }

  const positions = new Map();
  // Relative positions first, bottom-up (a box's size is its contents'), then absolute.
  const relative = new Map();
  const solve = (container) => {
    const members = inContainer.get(container) ?? [];
    const size = new Map();
    for (const vnode of members) {
      if (vnode.expanded && inContainer.has(vnode.key)) {
        const inner = solve(vnode.key);
        size.set(vnode.key, {
          width: Math.max(settings.nodeWidth, inner.width + 2 * settings.boxPadding),
          height: settings.nodeHeight + inner.height + 2 * settings.boxPadding,
        });
      } else {
        size.set(vnode.key, {width: settings.nodeWidth, height: settings.nodeHeight});
      }
    }
    const level = layoutLevel(
      members.map((vnode) => vnode.key), edgesIn.get(container) ?? [], size, settings);
    for (const [key, position] of level.positions) {
      relative.set(key, {...position, ...size.get(key)});
    }
    return level;
  };
  const top = solve(null);
  const place = (container, originX, originY, depth) => {
    for (const vnode of inContainer.get(container) ?? []) {
      const rel = relative.get(vnode.key);
      const position = {
        x: originX + rel.x, y: originY + rel.y, width: rel.width, height: rel.height,
        layer: rel.layer, order: rel.order, parent: container, depth,
      };
      positions.set(vnode.key, position);
      if (vnode.expanded) {
        place(vnode.key, position.x + settings.boxPadding,
          position.y + settings.nodeHeight + settings.boxPadding, depth + 1);
      }
    }
  };
  place(null, 0, 0, 0);
  return {positions, width: top.width, height: top.height, nodes: visible.nodes,
    edges: visible.edges, owner: visible.owner};
}

// ---------------------------------------------------------------------------------------
// The view.

const SVG = 'http://www.w3.org/2000/svg';
const MIN_SCALE = 0.05;
const MAX_SCALE = 4;
const FIT_MARGIN = 16;

function svg(tag, attributes = {}, text = null) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== null) element.textContent = text;
  return element;
}

function html(tag, attributes = {}, text = null) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== null) element.textContent = text;
  return element;
}

function clip(text, room) {
  const value = String(text ?? '');
  return value.length > room ? `${value.slice(0, Math.max(1, room - 1))}…` : value;
}

function structureOf(nodes, edges) {
  const nodePart = nodes.map((node) => `${node.key}\u0001${node.parent ?? ''}\u0001${node.type}`);
  const edgePart = edges.map((edge) => `${edge.from}\u0001${edge.to}`);
  return `${nodePart.sort().join('\u0000')}\u0002${edgePart.sort().join('\u0000')}`;
}

/** What a group's members are, by category, worst first: [[category, count], ...]. */
function summarise(members, byKey) {
  const counts = new Map();
  for (const key of members) {
    const node = byKey.get(key);
    const {category} = node ? statusOf(node) : {category: 'init'};
    counts.set(category, (counts.get(category) ?? 0) + 1);
  }
  return CATEGORIES.filter((category) => counts.has(category))
    .map((category) => [category, counts.get(category)]);
}

export class GraphView {
  /**
   * `container`: the element to draw in. `onSelect(key)`: called when the user selects a
   * resource (click, Enter or Space). `controls`: true adds the view's own search field and
   * zoom buttons (off: the stack page has its own); `legend`: false leaves out the key to
   * the glyphs and borders. `fitHeight`: true makes the drawing as tall as the graph
   * needs at the width it has (the height fit() would fill), between the CSS variables
   * --kg-min-height and --kg-height; off, it is --kg-height tall. Any other option
   * overrides a layout constant (DEFAULTS).
   */
  constructor(container, {onSelect = () => {}, controls = false, legend = true,
    fitHeight = false, ...settings} = {}) {
    this.container = container;
    this.onSelect = onSelect;
    this._fitHeight = fitHeight;
    this._sizedWidth = null;
    this.settings = {...DEFAULTS, ...settings};
    this._nodes = [];
    this._edges = [];
    this._byKey = new Map();
    this._structure = null;
    this._expanded = new Set();
    this._layout = null;
    this._layoutCount = 0;
    this._selected = null;
    this._focusKey = null;
    this._query = '';
    this._matches = [];
    this._view = {scale: 1, x: 0, y: 0};
    this._needsFit = true;
    this._cards = new Map();
    this._looks = new Map(); // key -> what its card shows, to redraw only what changed
    this.searchCount = null;
    this._id = `kg${Math.random().toString(36).slice(2, 10)}`;
    this._build(controls, legend);
  }

  // --- Public interface --------------------------------------------------------------

  /** Shows `graph` (the "graph" object of GET .../graph). */
  update(graph) {
    this._stack = graph?.stack ?? null;
    this._nodes = graph?.nodes ?? [];
    this._edges = graph?.edges ?? [];
    this._byKey = new Map(this._nodes.map((node) => [node.key, node]));
    const structure = structureOf(this._nodes, this._edges);
    if (structure !== this._structure) {
      this._structure = structure;
      this._relayout();
    } else {
      this._restyle();
    }
    if (this._query) this._highlight();
    if (this._needsFit) this.fit();
  }

  zoom(factor) {
    const {width, height} = this._viewportSize();
    this._zoomAt(factor, width / 2, height / 2);
  }

  /** Scales and centres the whole graph in the view (never larger than life). */
  fit() {
    const {width, height} = this._viewportSize();
    if (!this._layout || width === 0 || height === 0) {
      this._needsFit = true;
      return;
    }
    this._needsFit = false;
    const w = Math.max(this._layout.width, 1);
    const h = Math.max(this._layout.height, 1);
    const scale = Math.max(MIN_SCALE, Math.min(
      1, (width - 2 * FIT_MARGIN) / w, (height - 2 * FIT_MARGIN) / h));
    this._view = {scale, x: (width - w * scale) / 2, y: (height - h * scale) / 2};
    this._applyView();
  }

  /** Selects the resource `key` (null: none) without calling onSelect; opens what hides it. */
  select(key) {
    this._selected = key ?? null;
    if (key != null && this._byKey.has(key)) {
      const opened = this._openAround(key);
      if (opened) this._relayout();
      this._focusKey = key;
      this._markSelection();
      this._reveal(key);
    } else {
      this._markSelection();
    }
  }

  /** Highlights the resources whose name, key, type or physical id contains `text`. */
  search(text) {
    this._query = String(text ?? '').trim().toLowerCase();
    this._highlight();
    const first = this._matches[0];
    if (first !== undefined) this._reveal(this._layout.owner.get(first));
    return [...this._matches];
  }

  expand(key) {
    this._setExpanded(key, true);
  }

  collapse(key) {
    this._setExpanded(key, false);
  }

  // Read-only state, for the page and the tests.
  get selected() { return this._selected; }
  get transform() { return {...this._view}; }
  get layoutCount() { return this._layoutCount; }
  get expanded() { return [...this._expanded]; }
  get lastLayout() { return this._layout; }

  // --- Building ----------------------------------------------------------------------

  _build(controls, legend) {
    const root = this.container;
    root.classList.add('kg');
    if (this._fitHeight) root.classList.add('is-fit-height');
    const helpId = `${this._id}-help`;
    if (controls || legend) root.append(this._buildToolbar(controls, legend));
    this.svg = svg('svg', {
      class: 'kg-svg', role: 'group', 'aria-label': 'Dependency graph',
      'aria-describedby': helpId,
    });
    const defs = svg('defs');
    for (const [suffix, cls] of [['arrow', 'kg-arrow'], ['arrow-active', 'kg-arrow is-active']]) {
      const marker = svg('marker', {
        id: `${this._id}-${suffix}`, viewBox: '0 0 10 10', refX: '9', refY: '5',
        markerWidth: '9', markerHeight: '9', orient: 'auto-start-reverse',
        markerUnits: 'userSpaceOnUse',
      });
      marker.append(svg('path', {d: 'M0,0 L10,5 L0,10 z', class: cls}));
      defs.append(marker);
    }
    this.viewport = svg('g', {class: 'kg-viewport'});
    this.boxLayer = svg('g', {class: 'kg-boxes'});
    this.edgeLayer = svg('g', {class: 'kg-edges', 'aria-hidden': 'true'});
    this.nodeLayer = svg('g', {class: 'kg-nodes'});
    this.viewport.append(this.boxLayer, this.edgeLayer, this.nodeLayer);
    this.svg.append(defs, this.viewport);
    this.empty = html('p', {class: 'kg-empty', hidden: ''}, 'No resources.');
    const help = html('p', {id: helpId, class: 'kg-visually-hidden'},
      'Arrow keys move between resources, Enter or Space selects one, E opens or closes a '
      + 'nested stack or group, plus and minus zoom, 0 fits the graph in view.');
    root.append(this.svg, this.empty, help);
    this._listen();
  }

  _buildToolbar(controls, withLegend) {
    const bar = html('div', {class: 'kg-toolbar'});
    if (controls) bar.append(...this._buildControls());
    if (withLegend) bar.append(this._buildLegend());
    return bar;
  }

  _buildControls() {
    const search = html('input', {
      type: 'search', class: 'kg-search', placeholder: 'Find a resource',
      'aria-label': 'Find a resource by name, type or physical id',
    });
    this.searchCount = html('span', {class: 'kg-search-count', 'aria-live': 'polite'});
    search.addEventListener('input', () => this.search(search.value));
    search.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' || !this._matches.length) return;
      event.preventDefault();
      this._focus(this._layout.owner.get(this._matches[0]));
    });
    const button = (label, text, action) => {
      const element = html('button', {type: 'button', class: 'kg-button', 'aria-label': label,
        title: label}, text);
      element.addEventListener('click', action);
      return element;
    };
    const zoom = html('span', {class: 'kg-zoom', role: 'group', 'aria-label': 'Zoom'});
    zoom.append(button('Zoom out', '−', () => this.zoom(1 / 1.25)),
      button('Zoom in', '+', () => this.zoom(1.25)),
      button('Fit the graph in view', 'Fit', () => this.fit()));
    return [search, this.searchCount, zoom];
  }

  _buildLegend() {
    const legend = html('ul', {class: 'kg-legend', 'aria-label': 'Legend'});
    for (const category of ['complete', 'progress', 'failed', 'init', 'deleted']) {
      const item = html('li', {class: `kg-legend-item is-${category}`});
      item.append(html('span', {class: 'kg-legend-glyph', 'aria-hidden': 'true'},
        GLYPHS[category]), document.createTextNode(WORDS[category]));
      legend.append(item);
    }
    for (const [cls, text] of [['is-replaced', 'replaced (old one pending deletion)'],
      ['is-deleting', 'being deleted']]) {
      const item = html('li', {class: `kg-legend-item ${cls}`});
      item.append(html('span', {class: 'kg-legend-swatch', 'aria-hidden': 'true'}),
        document.createTextNode(text));
      legend.append(item);
    }
    return legend;
  }

  _listen() {
    this.svg.addEventListener('keydown', (event) => this._onKey(event));
    this.svg.addEventListener('click', (event) => this._onClick(event));
    this.svg.addEventListener('dblclick', (event) => {
      const key = this._cardKey(event.target);
      if (key !== null && this._vnode(key)?.kind === 'resource') this._toggle(key);
    });
    this.svg.addEventListener('wheel', (event) => {
      event.preventDefault();
      const perLine = event.deltaMode === 1 ? 0.05 : 0.0015;
      const point = this._pointer(event);
      this._zoomAt(Math.exp(-event.deltaY * perLine), point.x, point.y);
    }, {passive: false});
    let drag = null;
    this.svg.addEventListener('pointerdown', (event) => {
      this._dragged = false;
      if (event.button !== 0) return;
      drag = {id: event.pointerId, x: event.clientX, y: event.clientY, view: {...this._view}};
    });
    this.svg.addEventListener('pointermove', (event) => {
      if (!drag || drag.id !== event.pointerId) return;
      const dx = event.clientX - drag.x;
      const dy = event.clientY - drag.y;
      if (!this._dragged && Math.hypot(dx, dy) < 4) return;
      if (!this._dragged) {
        this._dragged = true;
        this.svg.setPointerCapture(event.pointerId);
        this.svg.classList.add('is-panning');
      }
      this._view = {...drag.view, x: drag.view.x + dx, y: drag.view.y + dy};
      this._applyView();
    });
    const end = (event) => {
      if (!drag || drag.id !== event.pointerId) return;
      drag = null;
      this.svg.classList.remove('is-panning');
      if (this.svg.hasPointerCapture(event.pointerId)) {
        this.svg.releasePointerCapture(event.pointerId);
      }
    };
    this.svg.addEventListener('pointerup', end);
    this.svg.addEventListener('pointercancel', end);
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => {
        // A new width is a new scale for the graph, so a new height it needs.
        if (this._fitHeight && this.svg.clientWidth !== this._sizedWidth) this._sizeToGraph();
        if (this._needsFit) this.fit();
      }).observe(this.svg);
    }
  }

  // --- Layout and drawing ------------------------------------------------------------

  _relayout(anchor = null) {
    const before = anchor !== null ? this._layout?.positions.get(anchor) : null;
    this._layout = layout(this._nodes, this._edges, {...this.settings, expanded: this._expanded});
    this._layoutCount += 1;
    const after = anchor !== null ? this._layout.positions.get(anchor) : null;
    if (before && after) {
      // The node the user opened or closed stays where it was on the screen.
      this._view.x += (before.x - after.x) * this._view.scale;
      this._view.y += (before.y - after.y) * this._view.scale;
      this._applyView();
    }
    this._sizeToGraph();
    this._draw();
  }

  // For fitHeight: the height the layout takes at the scale fit() would choose for the
  // drawing's width, as --kg-fit-height (graph.css bounds it). Not while the drawing is not
  // rendered (a hidden section): the resize observer sizes it when it shows.
  _sizeToGraph() {
    if (!this._fitHeight || !this._layout) return;
    const width = this.svg.clientWidth;
    if (!width) return;
    this._sizedWidth = width;
    const scale = Math.max(MIN_SCALE, Math.min(
      1, (width - 2 * FIT_MARGIN) / Math.max(this._layout.width, 1)));
    const height = Math.ceil(this._layout.height * scale + 2 * FIT_MARGIN);
    this.container.style.setProperty('--kg-fit-height', `${height}px`);
  }

  _restyle() {
    // The same structure: the same positions; only statuses, reasons and flags changed.
    const fresh = visibleGraph(this._nodes, this._edges, {...this.settings,
      expanded: this._expanded});
    this._layout = {...this._layout, nodes: fresh.nodes, owner: fresh.owner};
    this._vnodes = new Map(fresh.nodes.map((vnode) => [vnode.key, vnode]));
    const redrawn = fresh.nodes.filter((vnode) => this._drawCard(vnode));
    this._fitTexts(redrawn.map((vnode) => this._cards.get(vnode.key)));
    this._styleEdges();
    this._markSelection();
  }

  _draw() {
    const {positions, nodes} = this._layout;
    this._vnodes = new Map(nodes.map((vnode) => [vnode.key, vnode]));
    this.empty.hidden = nodes.length > 0;
    const stackName = this._stack?.name ? ` of ${this._stack.name}` : '';
    this.svg.setAttribute('aria-label',
      `Dependency graph${stackName}: ${this._nodes.length} resources`);

    this.boxLayer.replaceChildren();
    for (const vnode of nodes) {
      if (!vnode.expanded) continue;
      const p = positions.get(vnode.key);
      this.boxLayer.append(svg('rect', {
        class: `kg-box is-${vnode.kind}`, x: p.x, y: p.y, width: p.width, height: p.height,
        rx: 10,
      }));
    }

    this.edgeLayer.replaceChildren();
    const nodeHeight = this.settings.nodeHeight;
    for (const {from, to} of this._layout.edges) {
      const a = positions.get(from);
      const b = positions.get(to);
      const x1 = a.x + a.width;
      const y1 = a.y + nodeHeight / 2;
      const x2 = b.x;
      const y2 = b.y + nodeHeight / 2;
      const bend = Math.max(24, (x2 - x1) / 2);
      const path = svg('path', {
        class: 'kg-edge',
        d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
      });
      path.dataset.from = from;
      path.dataset.to = to;
      this.edgeLayer.append(path);
    }

    const keep = new Set(nodes.map((vnode) => vnode.key));
    const hadFocus = this.nodeLayer.contains(document.activeElement)
      ? document.activeElement.dataset.key : null;
    for (const [key, card] of this._cards) {
      if (!keep.has(key)) {
        card.remove();
        this._cards.delete(key);
        this._looks.delete(key);
      }
    }
    // Parents before their contents, so a box's header is under nothing it holds.
    const byDepth = [...nodes].sort((a, b) => positions.get(a.key).depth
      - positions.get(b.key).depth);
    const redrawn = [];
    for (const vnode of byDepth) {
      let card = this._cards.get(vnode.key);
      if (!card) {
        card = svg('g', {class: 'kg-node', tabindex: '-1', role: 'button'});
        card.dataset.key = vnode.key;
        this._cards.set(vnode.key, card);
        this.nodeLayer.append(card);
      }
      const p = positions.get(vnode.key);
      card.setAttribute('transform', `translate(${p.x},${p.y})`);
      if (this._drawCard(vnode)) redrawn.push(card);
    }
    this._fitTexts(redrawn);
    this._styleEdges();
    this._markSelection();
    if (hadFocus !== null && !keep.has(hadFocus)) {
      this._focus(this._layout.owner.get(hadFocus) ?? nodes[0]?.key ?? null);
    }
  }

  _drawCard(vnode) {
    const card = this._cards.get(vnode.key);
    const p = this._layout.positions.get(vnode.key);
    if (!card || !p) return false;
    const width = p.width;
    const height = this.settings.nodeHeight;
    const resource = vnode.kind === 'resource' ? vnode.node : null;
    let category;
    let label; // the status in words
    let shownName;
    let detail;
    let statusText;
    let spoken;
    if (resource) {
      ({category, label} = statusOf(resource));
      shownName = vnode.name;
      detail = vnode.expandable ? `${resource.type} · ${vnode.inside} inside` : resource.type;
      statusText = label;
      spoken = [resource.name ?? resource.key, resource.type, label];
      if (resource.in_template === false) {
        statusText += ' · deleting';
        spoken.push('being deleted');
      }
      if (resource.replaced) {
        statusText += ' · replaced';
        spoken.push('replaced, old resource '
          + `${resource.replaced.physical_resource_id ?? ''} awaiting deletion`.trim());
      }
      if (resource.status_reason && category === 'failed') spoken.push(resource.status_reason);
    } else {
      const summary = summarise(vnode.members, this._byKey);
      category = summary[0]?.[0] ?? 'init';
      label = summary.map(([cat, n]) => `${n} ${WORDS[cat]}`).join(', ');
      shownName = `${vnode.members.length} × ${vnode.type.split('::').pop()}`;
      detail = vnode.type;
      statusText = summary.map(([cat, n]) => `${GLYPHS[cat]} ${n}`).join('   ');
      spoken = [vnode.name, `group of ${vnode.members.length} alike resources`, label];
    }
    if (vnode.expandable) spoken.push(vnode.expanded ? 'expanded' : 'collapsed');
    // A poll redraws only the cards whose look changed: a card's elements replaced under
    // the pointer between press and release would lose the click.
    const look = JSON.stringify([width, category, shownName, detail, statusText, spoken,
      resource?.status_reason, resource?.replaced, resource?.in_template]);
    if (this._looks.get(vnode.key) === look) return false;
    this._looks.set(vnode.key, look);

    const classes = ['kg-node', `is-${category}`, `is-${vnode.kind}`];
    if (vnode.expandable) classes.push(vnode.expanded ? 'is-expanded' : 'is-collapsed');
    if (resource?.in_template === false) classes.push('is-deleting');
    if (resource?.replaced) classes.push('is-replaced');
    card.setAttribute('class', classes.join(' '));
    card.setAttribute('aria-label', spoken.join(', '));
    if (vnode.expandable) card.setAttribute('aria-expanded', String(vnode.expanded));
    else card.removeAttribute('aria-expanded');

    const parts = [];
    if (resource?.replaced) {
      parts.push(svg('rect', {class: 'kg-ghost', x: 6, y: 6, width, height, rx: 6}));
    }
    if (vnode.kind === 'group' && !vnode.expanded) {
      parts.push(svg('rect', {class: 'kg-deck', x: 8, y: 8, width, height, rx: 6}),
        svg('rect', {class: 'kg-deck', x: 4, y: 4, width, height, rx: 6}));
    }
    parts.push(svg('rect', {class: 'kg-halo', x: -5, y: -5, width: width + 10,
      height: height + 10, rx: 9}));
    parts.push(svg('rect', {class: 'kg-card', x: 0, y: 0, width, height, rx: 6}));
    parts.push(svg('rect', {class: 'kg-strip', x: 0, y: 0, width: 6, height, rx: 3}));
    parts.push(svg('text', {class: 'kg-glyph', x: 14, y: 20, 'aria-hidden': 'true'},
      GLYPHS[category]));
    // Texts get the room they may take; _fitTexts() clips them once all are drawn.
    parts.push(svg('text', {class: 'kg-name', x: 32, y: 20,
      'data-room': width - (vnode.expandable ? 62 : 40), 'data-char': 7.8}, shownName));
    if (resource?.in_template === false) {
      parts.push(svg('line', {class: 'kg-strike', x1: 30, y1: 16, x2: 34, y2: 16}));
    }
    parts.push(svg('text', {class: 'kg-type', x: 14, y: 36, 'data-room': width - 22,
      'data-char': 6.6}, detail));
    parts.push(svg('text', {class: 'kg-status', x: 14, y: 51, 'data-room': width - 22,
      'data-char': 7}, statusText));
    if (vnode.expandable) {
      const toggle = svg('g', {class: 'kg-toggle', transform: `translate(${width - 26},5)`});
      toggle.append(svg('rect', {width: 20, height: 20, rx: 4}),
        svg('text', {x: 10, y: 15, 'text-anchor': 'middle'}, vnode.expanded ? '−' : '+'));
      parts.push(toggle);
    }
    const title = [vnode.name, detail, label];
    if (resource?.status_reason) title.push(resource.status_reason);
    if (resource?.replaced?.physical_resource_id) {
      title.push(`replaces ${resource.replaced.physical_resource_id}`);
    }
    parts.push(svg('title', {}, title.join('\n')));
    card.replaceChildren(...parts);
    return true;
  }

  // Clips the cards' texts to their room, measured: every length is read before any text
  // is changed, so the browser lays the drawing out once, not once per text. A drawing
  // that is not rendered (a hidden tab) measures nothing and is clipped by estimate.
  _fitTexts(cards) {
    const texts = [];
    for (const card of cards) texts.push(...card.querySelectorAll('text[data-room]'));
    const lengths = texts.map((text) => text.getComputedTextLength());
    texts.forEach((text, i) => {
      const full = text.textContent;
      const room = Number(text.dataset.room);
      const length = lengths[i] || full.length * Number(text.dataset.char);
      let shown = length;
      if (length > room) {
        text.textContent = clip(full, Math.floor((full.length * room) / length));
        shown = room;
      }
      const strike = text.classList.contains('kg-name')
        ? text.parentNode.querySelector('.kg-strike') : null;
      if (strike) strike.setAttribute('x2', String(34 + shown));
    });
  }

  _styleEdges() {
    const owner = this._layout?.owner;
    const selected = this._selected != null ? owner?.get(this._selected) : undefined;
    for (const path of this.edgeLayer.children) {
      const {from, to} = path.dataset;
      const target = this._vnodes.get(to);
      const running = target?.kind === 'resource'
        && statusOf(target.node).category === 'progress';
      const active = selected !== undefined && (from === selected || to === selected);
      path.classList.toggle('is-running', running);
      path.classList.toggle('is-active', active);
      path.setAttribute('marker-end', `url(#${this._id}-${active ? 'arrow-active' : 'arrow'})`);
    }
  }

  _markSelection() {
    if (!this._layout) return;
    const owner = this._layout.owner;
    const shownBy = this._selected != null ? owner.get(this._selected) : undefined;
    for (const [key, card] of this._cards) {
      const isIt = key === this._selected;
      card.classList.toggle('is-selected', isIt);
      card.classList.toggle('has-selected', !isIt && key === shownBy);
      if (isIt) card.setAttribute('aria-current', 'true');
      else card.removeAttribute('aria-current');
    }
    this._styleEdges();
    // Roving tabindex: one node in the tab order, the arrow keys reach the rest.
    let focusKey = this._focusKey != null ? owner.get(this._focusKey) : undefined;
    if (focusKey === undefined || !this._cards.has(focusKey)) {
      focusKey = shownBy ?? this._layout.nodes[0]?.key;
    }
    for (const [key, card] of this._cards) {
      card.setAttribute('tabindex', key === focusKey ? '0' : '-1');
    }
  }

  _highlight() {
    const query = this._query;
    this._matches = !query ? [] : this._nodes.filter((node) => [
      node.name, node.key, node.type, node.physical_resource_id,
    ].some((value) => value != null && String(value).toLowerCase().includes(query)))
      .map((node) => node.key);
    const shown = new Set(this._matches);
    const holders = new Set(this._matches.map((key) => this._layout?.owner.get(key)));
    for (const [key, card] of this._cards) {
      card.classList.toggle('is-match', shown.has(key));
      card.classList.toggle('is-match-inside', !shown.has(key) && holders.has(key));
    }
    this.svg.classList.toggle('is-searching', query !== '');
    if (this.searchCount) {
      const n = this._matches.length;
      this.searchCount.textContent = !query ? '' : `${n || 'No'} match${n === 1 ? '' : 'es'}`;
    }
  }

  // --- Expansion ---------------------------------------------------------------------

  _vnode(key) {
    return this._vnodes?.get(key);
  }

  _setExpanded(key, open) {
    if (open === this._expanded.has(key)) return;
    if (open) this._expanded.add(key);
    else this._expanded.delete(key);
    if (!this._layout) return;
    const focused = this.nodeLayer.contains(document.activeElement);
    this._relayout(this._layout.positions.has(key) ? key : null);
    if (this._query) this._highlight();
    if (focused && this._cards.has(key)) this._focus(key);
  }

  _toggle(key) {
    const vnode = this._vnode(key);
    if (vnode?.expandable) this._setExpanded(key, !vnode.expanded);
  }

  // Opens the collapsed nested stacks and groups around resource `key`; true if any was.
  _openAround(key) {
    let opened = false;
    for (let guard = 0; guard < 64; guard += 1) {
      const shownBy = visibleGraph(this._nodes, this._edges, {...this.settings,
        expanded: this._expanded}).owner.get(key);
      if (shownBy === undefined || shownBy === key) break;
      this._expanded.add(shownBy);
      opened = true;
    }
    return opened;
  }

  // --- Input -------------------------------------------------------------------------

  _cardKey(target) {
    const card = target instanceof Element ? target.closest('.kg-node') : null;
    return card && this.nodeLayer.contains(card) ? card.dataset.key : null;
  }

  _onClick(event) {
    if (this._dragged) {
      this._dragged = false;
      return;
    }
    const key = this._cardKey(event.target);
    if (key === null) return;
    const vnode = this._vnode(key);
    this._focus(key);
    if (event.target.closest('.kg-toggle') || vnode?.kind === 'group') {
      this._toggle(key);
      return;
    }
    this._choose(key);
  }

  _choose(key) {
    this._selected = key;
    this._focusKey = key;
    this._markSelection();
    this.onSelect(key);
  }

  _onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const key = this._cardKey(event.target);
    let handled = true;
    switch (event.key) {
      case '+':
      case '=':
        this.zoom(1.25);
        break;
      case '-':
      case '_':
        this.zoom(1 / 1.25);
        break;
      case '0':
        this.fit();
        break;
      case 'Enter':
      case ' ':
        if (key === null) handled = false;
        else if (this._vnode(key)?.kind === 'group') this._toggle(key);
        else this._choose(key);
        break;
      case 'e':
      case 'E':
        if (key === null) handled = false;
        else this._toggle(key);
        break;
      case 'ArrowLeft':
      case 'ArrowRight':
      case 'ArrowUp':
      case 'ArrowDown': {
        const next = key === null ? null : this._neighbour(key, event.key);
        if (next !== null) this._focus(next);
        break;
      }
      default:
        handled = false;
    }
    if (handled) event.preventDefault();
  }

  // The node to move to from `key`: along an edge for left and right when there is one,
  // else the nearest node that way (headers of boxes count where their header is).
  _neighbour(key, direction) {
    const {positions, edges} = this._layout;
    const headerHeight = this.settings.nodeHeight;
    const centre = (k) => {
      const p = positions.get(k);
      return {x: p.x + p.width / 2, y: p.y + headerHeight / 2, left: p.x, right: p.x + p.width};
    };
    const here = centre(key);
    let candidates;
    if (direction === 'ArrowRight' || direction === 'ArrowLeft') {
      const along = edges.filter((edge) => (direction === 'ArrowRight'
        ? edge.from === key : edge.to === key))
        .map((edge) => (direction === 'ArrowRight' ? edge.to : edge.from));
      candidates = along.length ? along : [...positions.keys()].filter((k) => {
        const there = centre(k);
        return direction === 'ArrowRight' ? there.left > here.right - 1
          : there.right < here.left + 1;
      });
    } else {
      candidates = [...positions.keys()].filter((k) => {
        const dy = centre(k).y - here.y;
        return k !== key && (direction === 'ArrowDown' ? dy > 1 : dy < -1);
      });
    }
    let best = null;
    let bestScore = Infinity;
    const horizontal = direction === 'ArrowRight' || direction === 'ArrowLeft';
    for (const k of candidates) {
      if (k === key) continue;
      const there = centre(k);
      const dx = Math.abs(there.x - here.x);
      const dy = Math.abs(there.y - here.y);
      const score = horizontal ? dx + 3 * dy : dy + 3 * dx;
      if (score < bestScore) {
        bestScore = score;
        best = k;
      }
    }
    return best;
  }

  _focus(key) {
    if (key == null || !this._cards.has(key)) return;
    this._focusKey = key;
    this._markSelection();
    this._reveal(key);
    this._cards.get(key).focus({preventScroll: true});
  }

  // --- Viewport ----------------------------------------------------------------------

  _viewportSize() {
    return {width: this.svg.clientWidth, height: this.svg.clientHeight};
  }

  _pointer(event) {
    const box = this.svg.getBoundingClientRect();
    return {x: event.clientX - box.left, y: event.clientY - box.top};
  }

  _zoomAt(factor, x, y) {
    const {scale} = this._view;
    const next = Math.min(MAX_SCALE, Math.max(MIN_SCALE, scale * factor));
    const k = next / scale;
    this._view = {scale: next, x: x - (x - this._view.x) * k, y: y - (y - this._view.y) * k};
    this._needsFit = false;
    this._applyView();
  }

  _applyView() {
    const {scale, x, y} = this._view;
    this.viewport.setAttribute('transform', `translate(${x},${y}) scale(${scale})`);
  }

  // Pans the least that brings the node `key` (a visible key) into view.
  _reveal(key) {
    const p = key != null ? this._layout?.positions.get(key) : null;
    const {width, height} = this._viewportSize();
    if (!p || !width || !height) return;
    const {scale} = this._view;
    const left = p.x * scale + this._view.x;
    const top = p.y * scale + this._view.y;
    const right = left + Math.min(p.width, this.settings.nodeWidth * 2) * scale;
    const bottom = top + this.settings.nodeHeight * scale;
    let dx = 0;
    let dy = 0;
    if (left < FIT_MARGIN) dx = FIT_MARGIN - left;
    else if (right > width - FIT_MARGIN) dx = Math.max(width - FIT_MARGIN - right, FIT_MARGIN - left);
    if (top < FIT_MARGIN) dy = FIT_MARGIN - top;
    else if (bottom > height - FIT_MARGIN) dy = height - FIT_MARGIN - bottom;
    if (dx || dy) {
      this._view = {...this._view, x: this._view.x + dx, y: this._view.y + dy};
      this._applyView();
    }
  }
}
