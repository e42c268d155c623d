package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette follows the paper's colours: Clover (off) blue, write steering
// orange, write and read steering red; further modes get further colours.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{214, 39, 40, 255},
	color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
}

// Figure is one plot written by Plot: its file and the sentence report.md
// prints under it, saying what it shows.
type Figure struct {
	File    string
	Caption string
}

// scenarioPlots is how a scenario's plots are titled and labelled: the
// paper's figure each metric corresponds to, and what the x axis is.
type scenarioPlots struct {
	what string // the scenario in a few words, for titles
	// figure numbers in the SwordBox paper; 0: the paper has no such plot.
	throughput, bytes, latency int
	xTitle                     string
	// perClient plots throughput per client thread (Figure 14 does).
	perClient bool
	// casSuccess adds the CAS success plot (the scenario's key result).
	casSuccess bool
}

var scenarioFigures = map[string]scenarioPlots{
	"default": {what: "Clover, YCSB workloads", throughput: 11, bytes: 12, latency: 13, xTitle: "YCSB workload"},
	"partial": {what: "Clover, hottest keys steered, YCSB A", throughput: 14, xTitle: "keys steered (hottest first)", perClient: true, casSuccess: true},
	"size":    {what: "Clover, object size, YCSB A", throughput: 15, bytes: 15, latency: 15, xTitle: "object size (bytes)"},
	"zipf":    {what: "Clover, key popularity skew, YCSB A", throughput: 16, bytes: 16, latency: 16, xTitle: "zipf constant", casSuccess: true},
	"cas-mux": {what: "one lock word, CAS vs CAS rewritten into WRITE", throughput: 10, xTitle: "client QPs on the lock word"},
}

// modeNames spells the modes for legends, so that a mode is never read as
// an operation ("write" steering vs write latency).
var modeNames = map[string]string{
	"off": "swordbox off", "write": "write steering", "write+read": "write+read steering",
	"cas": "CAS", "cas-to-write": "CAS rewritten into WRITE",
}

func modeName(m string) string {
	if n, ok := modeNames[m]; ok {
		return n
	}
	return m
}

func title(metric string, fig int, sp scenarioPlots) string {
	if fig > 0 {
		return fmt.Sprintf("%s: %s (paper Figure %d)", metric, sp.what, fig)
	}
	return fmt.Sprintf("%s: %s", metric, sp.what)
}

// Plot draws the run's figures into dir and returns them with their
// captions: throughput.png, bytes_per_op.png, p99_latency.png (read and
// write p99 per mode) and, for the scenarios whose key result it is,
// cas_success.png. Titles carry the scenario and the paper's figure number;
// the x axis is the workload or the swept parameter; a y axis whose values
// span more than a decade is logarithmic.
func Plot(dir string, r *Run) ([]Figure, error) {
	var figs []Figure
	for _, b := range buildPlots(r) {
		if err := b.p.Save(b.width, 95*vg.Millimeter, filepath.Join(dir, b.file)); err != nil {
			return figs, fmt.Errorf("report: plot %s: %w", b.file, err)
		}
		figs = append(figs, Figure{File: b.file, Caption: b.caption})
	}
	return figs, nil
}

// builtPlot is a plot ready to save, with what tests check of it.
type builtPlot struct {
	file, caption string
	p             *plot.Plot
	width         vg.Length
	legend        []string
	log           bool
}

// buildPlots lays out the run's plots (Plot saves them).
func buildPlots(r *Run) []builtPlot {
	groups, modes, at := arrange(r.Cells)
	if len(groups) == 0 {
		return nil
	}
	sp, ok := scenarioFigures[r.Scenario]
	if !ok {
		sp = scenarioPlots{what: r.Scenario, xTitle: "workload"}
	}
	var built []builtPlot
	legends := map[*plot.Plot]*[]string{}
	save := func(p *plot.Plot, name, caption string) {
		_, log := p.Y.Scale.(plot.LogScale)
		built = append(built, builtPlot{file: name, caption: caption, p: p, width: figWidth(len(groups)), legend: *legends[p], log: log})
	}
	newPlot := func(t, ylabel string) *plot.Plot {
		p := plot.New()
		p.Title.Text = t
		p.X.Label.Text = sp.xTitle
		p.Y.Label.Text = ylabel
		p.Legend.Top, p.Legend.Left = true, true
		legends[p] = new([]string)
		return p
	}
	addLegend := func(p *plot.Plot, name string, c color.Color) {
		p.Legend.Add(name, swatch{c})
		*legends[p] = append(*legends[p], name)
	}
	drawBars := func(p *plot.Plot, series []barSeries, extra int) bool {
		return drawBars(p, groups, series, extra, func(name string, c color.Color) { addLegend(p, name, c) })
	}
	// series is one metric per mode, as grouped bars.
	series := func(val func(Cell) float64) []barSeries {
		var out []barSeries
		for i, m := range modes {
			s := barSeries{label: modeName(m), color: palette[i%len(palette)]}
			for j, g := range groups {
				if c, ok := at[[2]string{g, m}]; ok {
					if v := val(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
						s.points = append(s.points, barPoint{x: j, y: v})
					}
				}
			}
			out = append(out, s)
		}
		return out
	}

	tput := func(c Cell) float64 { return c.OpsPerSec }
	ylabel, metric := "operations/s", "Throughput"
	if sp.perClient {
		tput = func(c Cell) float64 {
			if c.Clients <= 0 {
				return math.NaN()
			}
			return c.OpsPerSec / float64(c.Clients)
		}
		ylabel, metric = "operations/s per client thread", "Throughput per client"
	}
	p := newPlot(title(metric, sp.throughput, sp), ylabel)
	if drawBars(p, series(tput), 0) {
		save(p, "throughput.png", throughputCaption(r, sp))
	}

	p = newPlot(title("Bytes per operation", sp.bytes, sp), "bytes per operation")
	if drawBars(p, series(func(c Cell) float64 { return c.BytesPerOp }), 0) {
		save(p, "bytes_per_op.png", bytesCaption(r))
	}

	// p99 latency: read bars in the mode's colour, write bars lighter; the
	// legend names each mode once and each operation once.
	var lat []barSeries
	hasRead, hasWrite := false, false
	for i, m := range modes {
		col := palette[i%len(palette)]
		rd := barSeries{label: modeName(m), color: col}
		wr := barSeries{color: lighten(col)}
		for j, g := range groups {
			c, ok := at[[2]string{g, m}]
			if !ok {
				continue
			}
			if v := c.ReadP99us; v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				rd.points = append(rd.points, barPoint{x: j, y: v})
				hasRead = true
			}
			if v := c.WriteP99us; v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				wr.points = append(wr.points, barPoint{x: j, y: v})
				hasWrite = true
			}
		}
		lat = append(lat, rd, wr)
	}
	ops := "read (solid) and write (lighter)"
	switch {
	case hasRead && !hasWrite:
		ops = "read"
	case hasWrite && !hasRead:
		ops = "write"
	}
	p = newPlot(title("p99 latency, "+ops, sp.latency, sp), "µs")
	if hasRead || hasWrite {
		if !hasRead || !hasWrite {
			// One operation only: one bar per mode, in the mode's colour.
			var one []barSeries
			for k := 0; k < len(lat); k += 2 {
				s := lat[k]
				if !hasRead {
					s.points = lat[k+1].points
				}
				one = append(one, s)
			}
			lat = one
		} else {
			grey := color.RGBA{90, 90, 90, 255}
			addLegend(p, "read p99 (solid)", grey)
			addLegend(p, "write p99 (lighter)", lighten(grey))
		}
		extra := 0
		if hasRead && hasWrite {
			extra = 2
		}
		if drawBars(p, lat, extra) {
			save(p, "p99_latency.png", latencyCaption(r))
		}
	}

	if sp.casSuccess {
		p = newPlot(title("CAS success", 0, sp), "CAS succeeded (%)")
		if drawBars(p, series(func(c Cell) float64 { return 100 * c.CASSuccessRate }), 0) {
			save(p, "cas_success.png", "The share of clients' CAS that succeeded: without steering, contending writers mostly lose the race for the tail and retry; with it, the switch moves each CAS onto the current tail.")
		}
	}
	return built
}

func bytesCaption(r *Run) string {
	if r.Scenario == "cas-mux" {
		return "Bytes on the wire per lock operation, both sides of the middlebox: a failed CAS costs a round trip that a rewritten one never makes."
	}
	return "Every byte of every frame that crossed the switch (Ethernet header to ICRC), metadata traffic included, divided by completed operations: what steering saves by landing CAS and READ on the tail at once instead of walking the chain and retrying."
}

func latencyCaption(r *Run) string {
	if r.Scenario == "cas-mux" {
		return "99th-percentile latency of a lock operation: plain CAS queue behind the NIC's atomic unit; rewritten into WRITE they do not."
	}
	return "99th-percentile latency of each operation type: with steering, a CAS that lands on the tail does not fail and retry, and a READ does not walk the chain, so the tail shortens where contention was."
}

func throughputCaption(r *Run, sp scenarioPlots) string {
	switch r.Scenario {
	case "cas-mux":
		return "Lock operations per second as client QPs contend for one word: plain CAS is capped by the NIC's atomic rate on one address; the middlebox rewrites CAS into WRITE and orders them on one connection, so the cap no longer applies."
	case "partial":
		return "Operations per second per client thread as more of the hottest keys are steered: under heavy skew a few keys carry most of the contention, so steering them recovers most of the gain of steering all."
	}
	return "Completed operations per second with the same seed in every mode (so every mode issues the same operations): the gain is what steering wins back from CAS failures and chain walks; read-only workloads have nothing to win."
}

// barSeries is one mode's bars (or one operation's of a mode).
type barSeries struct {
	label  string // legend entry; empty: none
	color  color.Color
	points []barPoint
}

type barPoint struct {
	x int
	y float64
}

// drawBars adds grouped bars to p, on a log axis when the values span more
// than a decade, and reports whether there was anything to draw. Series
// without points take no slot and no legend entry.
func drawBars(p *plot.Plot, groups []string, series []barSeries, extraLegend int, legend func(string, color.Color)) bool {
	var used []barSeries
	lo, hi := math.Inf(1), 0.0
	for _, s := range series {
		if len(s.points) == 0 {
			continue
		}
		used = append(used, s)
		for _, pt := range s.points {
			if pt.y > 0 {
				lo = math.Min(lo, pt.y)
			}
			hi = math.Max(hi, pt.y)
		}
	}
	if len(used) == 0 || hi <= 0 {
		return false
	}
	bs := &bars{width: vg.Points(60 / float64(len(used)+1))}
	entries := float64(extraLegend)
	for i, s := range used {
		slot := float64(i) - float64(len(used)-1)/2
		for _, pt := range s.points {
			bs.bars = append(bs.bars, bar{x: float64(pt.x), slot: slot, y: pt.y, color: s.color})
		}
		if s.label != "" {
			legend(s.label, s.color)
			entries++
		}
	}
	p.Add(bs)
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	if hi/lo > 10 {
		bs.log = true
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += " (log)"
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		p.Y.Max = hi * math.Pow(10, 0.25+0.12*entries) // room for the legend
	} else {
		p.Y.Tick.Marker = humanTicks{}
		p.Y.Min, p.Y.Max = 0, hi*(1.1+0.09*entries)
	}
	return true
}

// arrange orders the cells for plotting: x groups (the workload, or the
// swept parameter's value when the run sweeps one), modes in first-seen
// order.
func arrange(cells []Cell) (groups, modes []string, at map[[2]string]Cell) {
	at = map[[2]string]Cell{}
	seenG, seenM := map[string]bool{}, map[string]bool{}
	workloads := map[string]bool{}
	for _, c := range cells {
		workloads[c.Workload] = true
	}
	for _, c := range cells {
		g := c.Workload
		if c.Param != "" {
			// "tracked=8" -> "8": the axis title names the parameter.
			_, v, ok := strings.Cut(c.Param, "=")
			if !ok {
				v = c.Param
			}
			g = v
			if len(workloads) > 1 {
				g = c.Workload + " " + v
			}
		}
		if !seenG[g] {
			seenG[g] = true
			groups = append(groups, g)
		}
		if !seenM[c.Mode] {
			seenM[c.Mode] = true
			modes = append(modes, c.Mode)
		}
		at[[2]string{g, c.Mode}] = c
	}
	return groups, modes, at
}

func figWidth(groups int) vg.Length { return vg.Length(80+40*groups) * vg.Millimeter }

// humanTicks labels a linear axis with k/M suffixes.
type humanTicks struct{}

func (humanTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = human(ts[i].Value)
		}
	}
	return ts
}

// bar is one bar of a grouped bar chart. gonum's BarChart starts bars at
// zero, which a log scale cannot show, so bars are drawn here, from the
// axis's minimum.
type bar struct {
	x, slot, y float64
	color      color.Color
}

type bars struct {
	width vg.Length
	log   bool
	bars  []bar
}

func (bs *bars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, b := range bs.bars {
		x := trX(b.x) + vg.Length(b.slot)*bs.width
		rect := vg.Rectangle{Min: vg.Point{X: x - bs.width/2, Y: trY(plt.Y.Min)}, Max: vg.Point{X: x + bs.width/2, Y: trY(b.y)}}
		c.SetColor(b.color)
		c.Fill(rect.Path())
	}
}

// DataRange reports the x groups and the y values.
func (bs *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), 0
	for _, b := range bs.bars {
		ymin, ymax = math.Min(ymin, b.y), math.Max(ymax, b.y)
	}
	if !bs.log {
		ymin = 0
	}
	return 0, 0, ymin, ymax
}

// swatch is a legend entry: a filled square of one colour.
type swatch struct{ color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.Color)
	c.Fill(c.Rectangle.Path())
}

func lighten(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	l := func(v uint32) uint8 { return uint8((v>>8 + 2*255) / 3) }
	return color.RGBA{l(r), l(g), l(b), 255}
}
