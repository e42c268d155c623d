package target

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/swordbox/swordbox/p4/target/frontend"
)

// The Tofino placement check (CompileOptions.TofinoPlacement, and
// Program.TofinoPlacement for a report without refusing): the physical
// constraints bf-p4c enforces on a tna program's stateful objects, checked
// on the compiled control flow of ingress and egress.
//
// Every register (with all its RegisterActions), Counter and Meter lives in
// one MAU stage, and a packet passes the stages of its gress once, in
// order. The compiler records, while it compiles a control, an effect tree
// (effNode): the accesses to stateful objects and table applies in
// evaluation order, with the structure that chooses between them (if/else,
// a table's actions, switch on action_run and if on t.apply().hit or .miss
// with each action paired with its branch, called actions and
// sub-controls, return and exit). A path is one choice at every branch of
// that structure; conditions are not evaluated, which is how bf-p4c's
// TablesMutuallyExclusive decides that two tables never run on the same
// packet (they are in different branches of an if, a hit/miss or an
// action chain), so accesses are exclusive only when they sit in
// different branches. One forward pass computes, at every access, which
// objects some path has accessed before it. The check refuses:
//
//   - a register, Counter or Meter accessed twice on one path (a stateful
//     ALU serves one RegisterAction per packet: bf-p4c refuses two
//     executes of a register in a row with "table A and table B are not
//     mutually exclusive, yet share Register R", p4lang/p4c issue 2113; a
//     counter or meter shared by tables that are not mutually exclusive is
//     SharedIndirectAttachedAnalysis's "cannot share ... because use of
//     the ... is not mutually exclusive"), and a table applied twice on one
//     path (bf-p4c's "Not all applies of table T are mutually exclusive");
//   - a cycle in the order of stateful objects: if a path accesses A and
//     later B, A's stage must not come after B's; so a path that accesses
//     A then B and another that accesses B then A (or a longer cycle
//     through other objects) cannot be placed.
//
// The order this check requires is program order on a path, which is
// stricter than bf-p4c: its dependency graph (table_dependency_graph.h)
// orders tables by data dependences (match and action read-after-write:
// a later stage), anti and output dependences (the same stage or later)
// and control dependences, and may reorder accesses that are independent.
// A program that passes this check has a stage order of its stateful
// objects that respects every path's program order, hence every
// dependence bf-p4c could find; a program it refuses might still be
// placed by bf-p4c if the reversed accesses are independent. Field-level
// dependence is not modelled (it needs bf-p4c's PHV allocation to be
// exact: container conflicts add constraints of their own). Stage counts
// and memory per stage are not checked either: with program order only,
// the longest chain is an upper bound, not what bf-p4c needs.
//
// Conservative points: the right operand of && and || and both arms of
// ?: count as evaluated; a hit or miss read in any other way than as the
// whole condition of an if is not paired with the actions (every action is
// followed by either branch); direct counters and meters are left out
// (their table runs once per path, which the table check covers).

type effKind uint8

const (
	effAccess effKind = iota // one access of obj at at
	effSeq                   // kids in order
	effAlt                   // kids are alternatives: exactly one runs
	effCall                  // kids[0] is a body (action, sub-control) that return leaves
	effReturn                // return: ends the innermost body
	effExit                  // exit: ends the pipeline block
)

type effNode struct {
	kind effKind
	obj  *stateObj
	at   frontend.Pos
	site int // effAccess: the access's number (Program.effSites)
	kids []*effNode
}

// stateObj is a stateful object or a table, as the check names it.
type stateObj struct {
	kind    string // "register", "counter", "meter", "table"
	name    string
	ord     int  // declaration order
	ordered bool // takes part in the stage order (stateful objects; not tables)
}

// effObj returns the object of an extern or a table (created on first
// use, in declaration order of first use).
func (c *compiler) effObj(key any, kind, name string) *stateObj {
	if c.objs == nil {
		c.objs = map[any]*stateObj{}
	}
	if o := c.objs[key]; o != nil {
		return o
	}
	o := &stateObj{kind: kind, name: name, ord: len(c.objs), ordered: kind != "table"}
	c.objs[key] = o
	return o
}

// effAdd appends n to the sequence being recorded (none: not recording).
func (c *compiler) effAdd(n *effNode) {
	if c.eff != nil {
		c.eff.kids = append(c.eff.kids, n)
	}
}

// effAccess records an access of the extern x at at.
func (c *compiler) effAccess(x *externC, kind string, at frontend.Pos) {
	c.effAdd(c.accessNode(c.effObj(x, kind, x.name), at))
}

// callPos is where a method call x.m(...) starts: at x.
func callPos(e *frontend.CallExpr) frontend.Pos {
	if m, ok := e.Fn.(*frontend.MemberExpr); ok {
		return m.X.ExprPos()
	}
	return e.P
}

// accessNode is a new access site of o.
func (c *compiler) accessNode(o *stateObj, at frontend.Pos) *effNode {
	n := &effNode{kind: effAccess, obj: o, at: at, site: len(c.sites)}
	c.sites = append(c.sites, n)
	return n
}

// effPush starts recording a new sequence; effPop ends it and returns it.
func (c *compiler) effPush() (saved *effNode) {
	saved = c.eff
	c.eff = &effNode{kind: effSeq}
	return saved
}

func (c *compiler) effPop(saved *effNode) *effNode {
	n := c.eff
	c.eff = saved
	return n
}

// effTable is the effect of applying t at at: the table, then one of its
// actions, each followed by then[i] when given (switch on action_run).
func (c *compiler) effTable(t *tableC, at frontend.Pos, then []*effNode) *effNode {
	alt := &effNode{kind: effAlt}
	for i, r := range t.actions {
		path := &effNode{kind: effSeq, kids: []*effNode{{kind: effCall, kids: []*effNode{r.act.effOrEmpty()}}}}
		if then != nil && then[i] != nil {
			path.kids = append(path.kids, then[i])
		}
		alt.kids = append(alt.kids, path)
	}
	return &effNode{kind: effSeq, kids: []*effNode{c.accessNode(c.effObj(t, "table", t.name), at), alt}}
}

// effTableHitMiss is the effect of if (t.apply().hit) (or .miss, or
// negated): an entry's action (any but @defaultonly ones) then hit, or the
// default action (the const one, else any but @tableonly ones) then miss.
func (c *compiler) effTableHitMiss(t *tableC, at frontend.Pos, hit, miss *effNode) *effNode {
	alt := &effNode{kind: effAlt}
	for i, r := range t.actions {
		call := &effNode{kind: effCall, kids: []*effNode{r.act.effOrEmpty()}}
		if r.scope != configv1.ActionRef_DEFAULT_ONLY {
			alt.kids = append(alt.kids, &effNode{kind: effSeq, kids: []*effNode{call, hit}})
		}
		if t.defConst && i == t.defAI || !t.defConst && r.scope != configv1.ActionRef_TABLE_ONLY {
			alt.kids = append(alt.kids, &effNode{kind: effSeq, kids: []*effNode{call, miss}})
		}
	}
	return &effNode{kind: effSeq, kids: []*effNode{c.accessNode(c.effObj(t, "table", t.name), at), alt}}
}

// hitBranch reports whether cond is t.apply().hit or .miss, possibly
// negated, and if so whether its then branch is taken on a hit.
func hitBranch(cond frontend.Expr) (thenOnHit, ok bool) {
	neg := false
	for {
		u, isUn := cond.(*frontend.UnExpr)
		if !isUn || u.Op != "!" {
			break
		}
		neg, cond = !neg, u.X
	}
	m, isMember := cond.(*frontend.MemberExpr)
	if !isMember || m.Name != "hit" && m.Name != "miss" {
		return false, false
	}
	if _, isCall := m.X.(*frontend.CallExpr); !isCall {
		return false, false
	}
	return (m.Name == "hit") != neg, true
}

func (a *actionC) effOrEmpty() *effNode {
	if a.eff == nil {
		return &effNode{kind: effSeq}
	}
	return a.eff
}

// site is where an access is: file:line:col.
type site struct {
	file string
	p    frontend.Pos
}

func (s site) String() string {
	return fmt.Sprintf("%s:%d:%d", s.p.FileOr(s.file), s.p.Line, s.p.Col)
}

// bits is a set of small integers (object ordinals).
type bits []uint64

func (b bits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// without is b minus i (b itself when i is not in it).
func (b bits) without(i int) bits {
	if !b.has(i) {
		return b
	}
	c := append(bits(nil), b...)
	c[i/64] &^= 1 << (i % 64)
	return c
}

func orBits(a, b bits) bits {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	c := append(bits(nil), a...)
	for i := range b {
		c[i] |= b[i]
	}
	return c
}

// effState is the analysis state at a point, over the paths that reach
// it (dead: none):
//   - acc: the objects some path has accessed, with the site of such an
//     access (a second access is a path with two);
//   - notAcc: the objects some path has not accessed;
//   - rows[i]: for access site i, the objects some path through site i has
//     not accessed (nil: no path through i). An access of X makes an edge
//     obj(i) -> X for every row i holding X: a path accessed obj(i) at i
//     and now X for the first time.
type effState struct {
	dead   bool
	acc    map[*stateObj]frontend.Pos
	notAcc bits
	rows   []bits
}

func joinState(a, b effState) effState {
	if a.dead {
		return b
	}
	if b.dead {
		return a
	}
	m := make(map[*stateObj]frontend.Pos, len(a.acc)+len(b.acc))
	for o, p := range b.acc {
		m[o] = p
	}
	for o, p := range a.acc {
		m[o] = p
	}
	rows := make([]bits, len(a.rows))
	for i := range rows {
		rows[i] = orBits(a.rows[i], b.rows[i])
	}
	return effState{acc: m, notAcc: orBits(a.notAcc, b.notAcc), rows: rows}
}

type edgeKey struct{ from, to *stateObj }

// placementAnalysis walks one control's effect tree.
type placementAnalysis struct {
	twice   map[*stateObj][2]frontend.Pos // first and second access on one path
	before  map[edgeKey][2]frontend.Pos   // from accessed (at [0]) before to (at [1]) on a path
	used    map[*stateObj]frontend.Pos    // every object the control touches, with one site
	returns []effState                    // per body being walked: the states its returns leave
	order   []*stateObj                   // objects in first-access order
	edges   map[*stateObj][]*stateObj     // adjacency, in discovery order
	sites   []*effNode                    // access nodes by site id
}

func newPlacementAnalysis(sites []*effNode) *placementAnalysis {
	return &placementAnalysis{twice: map[*stateObj][2]frontend.Pos{}, before: map[edgeKey][2]frontend.Pos{},
		used: map[*stateObj]frontend.Pos{}, edges: map[*stateObj][]*stateObj{}, sites: sites}
}

func (a *placementAnalysis) run(n *effNode, s effState) effState {
	if s.dead {
		return s
	}
	switch n.kind {
	case effAccess:
		o := n.obj
		if _, ok := a.used[o]; !ok {
			a.used[o] = n.at
			a.order = append(a.order, o)
		}
		if p, again := s.acc[o]; again {
			if _, dup := a.twice[o]; !dup {
				a.twice[o] = [2]frontend.Pos{p, n.at}
			}
		}
		rows := make([]bits, len(s.rows))
		for i, r := range s.rows {
			if r == nil {
				continue
			}
			if r.has(o.ord) {
				if y := a.sites[i].obj; o.ordered && y.ordered && y != o {
					k := edgeKey{y, o}
					if _, ok := a.before[k]; !ok {
						a.before[k] = [2]frontend.Pos{a.sites[i].at, n.at}
						a.edges[y] = append(a.edges[y], o)
					}
				}
			}
			rows[i] = r.without(o.ord)
		}
		notAcc := s.notAcc.without(o.ord)
		rows[n.site] = notAcc
		m := make(map[*stateObj]frontend.Pos, len(s.acc)+1)
		for y, p := range s.acc {
			m[y] = p
		}
		if _, ok := m[o]; !ok {
			m[o] = n.at
		}
		return effState{acc: m, notAcc: notAcc, rows: rows}
	case effSeq:
		for _, k := range n.kids {
			s = a.run(k, s)
		}
		return s
	case effAlt:
		out := effState{dead: true}
		for _, k := range n.kids {
			out = joinState(out, a.run(k, s))
		}
		return out
	case effCall:
		a.returns = append(a.returns, effState{dead: true})
		out := a.run(n.kids[0], s)
		r := a.returns[len(a.returns)-1]
		a.returns = a.returns[:len(a.returns)-1]
		return joinState(out, r)
	case effReturn:
		if len(a.returns) > 0 {
			i := len(a.returns) - 1
			a.returns[i] = joinState(a.returns[i], s)
		}
		return effState{dead: true}
	case effExit:
		return effState{dead: true}
	}
	return s
}

// placementProblems checks the effect trees of a tna program's ingress
// and egress and returns its problems, each starting with file:line:col.
func placementProblems(in *placementInput) []string {
	file, gresses, trees := in.file, in.gresses, in.trees
	var out []string
	for gi, tree := range trees {
		if tree == nil {
			continue
		}
		a := newPlacementAnalysis(in.sites)
		a.returns = append(a.returns, effState{dead: true})
		all := make(bits, (in.nobj+63)/64+1)
		for i := 0; i < in.nobj; i++ {
			all[i/64] |= 1 << (i % 64)
		}
		a.run(tree, effState{acc: map[*stateObj]frontend.Pos{}, notAcc: all, rows: make([]bits, len(in.sites))})
		at := func(p frontend.Pos) string { return site{file, p}.String() }
		for _, o := range a.order {
			w, ok := a.twice[o]
			if !ok {
				continue
			}
			var why string
			switch o.kind {
			case "register":
				why = "a register lives in one stage, whose stateful ALU runs one RegisterAction per packet; accesses on different paths must be in different branches of an if, a switch or a table's actions"
			case "counter":
				why = "a Tofino counter counts at most once per packet"
			case "meter":
				why = "a meter lives in one stage and runs once per packet"
			case "table":
				why = "bf-p4c requires all applies of a table to be mutually exclusive"
			}
			verb := map[string]string{"register": "accessed", "counter": "counted", "meter": "executed", "table": "applied"}[o.kind]
			out = append(out, fmt.Sprintf("%s: %s %s is %s twice on one path through %s: first at %s, again here (%s)",
				at(w[1]), o.kind, o.name, verb, gresses[gi], at(w[0]), why))
		}
		cycles, comps := a.cycles()
		for ci, cyc := range cycles {
			var b strings.Builder
			first := a.before[edgeKey{cyc[0], cyc[1]}]
			fmt.Fprintf(&b, "%s: no stage order of %s's stateful objects serves every path (cycle ", at(first[0]), gresses[gi])
			for _, o := range cyc {
				b.WriteString(o.name + " -> ")
			}
			b.WriteString(cyc[0].name + "):")
			for i, o := range cyc {
				next := cyc[(i+1)%len(cyc)]
				w := a.before[edgeKey{o, next}]
				fmt.Fprintf(&b, " %s %s at %s is accessed before %s %s at %s on one path;", o.kind, o.name, at(w[0]), next.kind, next.name, at(w[1]))
			}
			b.WriteString(" each object lives in one stage and a packet passes the stages once, in order")
			if len(comps[ci]) > len(cyc) {
				names := make([]string, len(comps[ci]))
				for i, o := range comps[ci] {
					names[i] = o.name
				}
				fmt.Fprintf(&b, " (the cycle is one of those among %d objects: %s)", len(names), strings.Join(names, ", "))
			}
			out = append(out, b.String())
		}
	}
	return out
}

// cycles returns one shortest cycle per strongly connected component of
// the order graph of the registers, then one per component of the whole
// order graph (registers, counters and meters) that holds no register
// component, each starting at its earliest object, with its component. A
// cycle of registers names the order problem best: counters and meters are
// usually counted at fixed indexes and easy to move.
func (a *placementAnalysis) cycles() (cycles, comps [][]*stateObj) {
	regComps := a.components(func(o *stateObj) bool { return o.kind == "register" })
	inReg := map[*stateObj]bool{}
	for _, comp := range regComps {
		for _, v := range comp {
			inReg[v] = true
		}
	}
	all := regComps
	for _, comp := range a.components(func(*stateObj) bool { return true }) {
		if !slices.ContainsFunc(comp, func(o *stateObj) bool { return inReg[o] }) {
			all = append(all, comp)
		}
	}
	type found struct{ cyc, comp []*stateObj }
	var out []found
	for _, comp := range all {
		in := map[*stateObj]bool{}
		for _, v := range comp {
			in[v] = true
		}
		var best []*stateObj
		for _, s := range comp {
			if c := a.shortestCycle(s, in); c != nil && (best == nil || len(c) < len(best)) {
				best = c
			}
		}
		out = append(out, found{best, comp})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].cyc[0].ord < out[j].cyc[0].ord })
	for _, f := range out {
		cycles, comps = append(cycles, f.cyc), append(comps, f.comp)
	}
	return cycles, comps
}

// components returns the strongly connected components of more than one
// object of the order graph restricted to the objects keep accepts
// (Tarjan's algorithm), each sorted by ordinal.
func (a *placementAnalysis) components(keep func(*stateObj) bool) [][]*stateObj {
	var nodes []*stateObj
	for _, o := range a.order {
		if keep(o) {
			nodes = append(nodes, o)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ord < nodes[j].ord })
	index := map[*stateObj]int{}
	low := map[*stateObj]int{}
	on := map[*stateObj]bool{}
	var stack []*stateObj
	var sccs [][]*stateObj
	var strong func(v *stateObj)
	strong = func(v *stateObj) {
		index[v] = len(index)
		low[v] = index[v]
		stack = append(stack, v)
		on[v] = true
		for _, w := range a.edges[v] {
			if !keep(w) {
				continue
			}
			if _, ok := index[w]; !ok {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []*stateObj
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				sort.Slice(comp, func(i, j int) bool { return comp[i].ord < comp[j].ord })
				sccs = append(sccs, comp)
			}
		}
	}
	for _, v := range nodes {
		if _, ok := index[v]; !ok {
			strong(v)
		}
	}
	return sccs
}

// shortestCycle is a shortest cycle through s inside the component in
// (breadth-first; neighbours in declaration order).
func (a *placementAnalysis) shortestCycle(s *stateObj, in map[*stateObj]bool) []*stateObj {
	prev := map[*stateObj]*stateObj{}
	queue := []*stateObj{s}
	seen := map[*stateObj]bool{s: true}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		next := append([]*stateObj(nil), a.edges[v]...)
		sort.Slice(next, func(i, j int) bool { return next[i].ord < next[j].ord })
		for _, w := range next {
			if !in[w] {
				continue
			}
			if w == s {
				var cyc []*stateObj
				for x := v; x != s; x = prev[x] {
					cyc = append(cyc, x)
				}
				cyc = append(cyc, s)
				for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
					cyc[i], cyc[j] = cyc[j], cyc[i]
				}
				return cyc
			}
			if !seen[w] {
				seen[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// PlacementError is the Tofino placement check's refusal: every problem
// found, each starting with file:line:col.
type PlacementError struct {
	Problems []string
}

func (e *PlacementError) Error() string {
	return "Tofino placement: " + strings.Join(e.Problems, "\n")
}

// TofinoPlacement checks the program against the stage constraints
// bf-p4c enforces on stateful objects (see CompileOptions.TofinoPlacement)
// and returns a *PlacementError listing every problem, or nil. A v1model
// program has no such constraints here: nil.
func (p *Program) TofinoPlacement() error {
	if p.placeIn == nil {
		return nil
	}
	p.placeOnce.Do(func() { p.placement = placementProblems(p.placeIn) })
	if len(p.placement) == 0 {
		return nil
	}
	return &PlacementError{Problems: append([]string(nil), p.placement...)}
}

// placementInput is what the check needs of a compiled tna program: the
// effect trees of ingress and egress (named by their controls), every
// access site, and the number of objects.
type placementInput struct {
	file    string
	gresses []string
	trees   []*effNode
	sites   []*effNode
	nobj    int
}
