package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette follows the paper's colours: Clover (off) blue, write steering
// orange, write and read steering red; further modes get further colours.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{214, 39, 40, 255},
	color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
}

// Plot draws the run's figures into dir and returns their file names:
// throughput.png (Figure 11), bytes_per_op.png (Figure 12) and
// p99_latency.png (Figure 13, log scale). The x axis is the workload, or the
// swept parameter for scenarios that have one.
func Plot(dir string, r *Run) ([]string, error) {
	groups, modes, at := arrange(r.Cells)
	if len(groups) == 0 {
		return nil, nil
	}
	var files []string
	bar := func(name, title, ylabel string, val func(Cell) float64) error {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.Y.Tick.Marker = humanTicks{}
		p.Legend.Top, p.Legend.Left = true, true
		w := vg.Points(60 / float64(len(modes)+1))
		peak := 0.0
		for i, m := range modes {
			vals := make(plotter.Values, len(groups))
			for j, g := range groups {
				if c, ok := at[[2]string{g, m}]; ok {
					if v := val(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
						vals[j] = v
						peak = math.Max(peak, v)
					}
				}
			}
			b, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", name, err)
			}
			b.Offset = vg.Length(float64(i)-float64(len(modes)-1)/2) * w
			b.Color = palette[i%len(palette)]
			b.LineStyle.Width = 0
			p.Add(b)
			p.Legend.Add(m, b)
		}
		p.NominalX(groups...)
		p.Y.Min, p.Y.Max = 0, peak*(1.15+0.08*float64(len(modes))) // room for the legend
		if err := p.Save(figWidth(len(groups)), 90*vg.Millimeter, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("report: plot %s: %w", name, err)
		}
		files = append(files, name)
		return nil
	}
	if err := bar("throughput.png", "Throughput (Figure 11)", "operations per second", func(c Cell) float64 { return c.OpsPerSec }); err != nil {
		return files, err
	}
	if err := bar("bytes_per_op.png", "Bytes per operation (Figure 12)", "bytes on the wire per operation", func(c Cell) float64 { return c.BytesPerOp }); err != nil {
		return files, err
	}

	// Figure 13: p99 read (solid) and write (hatched in the paper; lighter
	// here) latency per mode, grouped bars on a log axis.
	p := plot.New()
	p.Title.Text = "p99 latency (Figure 13): read, then write (lighter)"
	p.Y.Label.Text = "µs (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	lb := &logBars{width: vg.Points(60 / float64(2*len(modes)+1))}
	for i, m := range modes {
		for k := 0; k < 2; k++ {
			slot := float64(2*i+k) - float64(2*len(modes)-1)/2
			col := palette[i%len(palette)]
			if k == 1 {
				col = lighten(col)
			}
			for j, g := range groups {
				c, ok := at[[2]string{g, m}]
				if !ok {
					continue
				}
				v := c.ReadP99us
				if k == 1 {
					v = c.WriteP99us
				}
				if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
					lb.bars = append(lb.bars, logBar{x: float64(j), slot: slot, y: v, color: col})
				}
			}
			kind := " read"
			if k == 1 {
				kind = " write"
			}
			p.Legend.Add(m+kind, swatch{col})
		}
	}
	if len(lb.bars) > 0 {
		p.Add(lb)
		p.NominalX(groups...)
		p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
		_, _, lo, hi := lb.DataRange()
		p.Y.Min, p.Y.Max = lo, hi*math.Pow(10, 0.3+0.12*float64(2*len(modes)))
		if err := p.Save(figWidth(len(groups)), 90*vg.Millimeter, filepath.Join(dir, "p99_latency.png")); err != nil {
			return files, fmt.Errorf("report: plot p99: %w", err)
		}
		files = append(files, "p99_latency.png")
	}
	return files, nil
}

// arrange orders the cells for plotting: x groups (workload, or the swept
// parameter when the run sweeps one), modes in first-seen order.
func arrange(cells []Cell) (groups, modes []string, at map[[2]string]Cell) {
	at = map[[2]string]Cell{}
	seenG, seenM := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		g := c.Workload
		if c.Param != "" {
			g = c.Workload + " " + c.Param
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

func figWidth(groups int) vg.Length { return vg.Length(70+45*groups) * vg.Millimeter }

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

// logBar is one bar of a grouped bar chart on a log axis: gonum's BarChart
// starts bars at zero, which a log scale cannot show.
type logBar struct {
	x, slot, y float64
	color      color.Color
}

type logBars struct {
	width vg.Length
	bars  []logBar
}

func (lb *logBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, b := range lb.bars {
		x := trX(b.x) + vg.Length(b.slot)*lb.width
		rect := vg.Rectangle{Min: vg.Point{X: x - lb.width/2, Y: trY(plt.Y.Min)}, Max: vg.Point{X: x + lb.width/2, Y: trY(b.y)}}
		c.SetColor(b.color)
		c.Fill(rect.Path())
	}
}

// DataRange reports the x groups and the y values with a floor one decade
// under the smallest bar.
func (lb *logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), 0
	for _, b := range lb.bars {
		ymin, ymax = math.Min(ymin, b.y), math.Max(ymax, b.y)
	}
	return 0, 0, math.Pow(10, math.Floor(math.Log10(ymin))), ymax
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
