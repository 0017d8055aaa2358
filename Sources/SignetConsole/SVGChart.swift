/// A bar chart as the operations page draws it: inline SVG from a template (every label
/// escaped), readable without script. Geometry is computed here; nothing here writes markup.
struct SVGChart {
    struct Bar {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
        var tone: String
        /// The tooltip and the screen reader's text.
        var title: String
    }

    struct Label {
        var x: Int
        var y: Int
        var text: String
        var anchor: String
    }

    var width: Int
    var height: Int
    var title: String
    var bars: [Bar]
    var labels: [Label]

    /// Vertical bars, one per value (oldest left), scaled to the largest; `marks` label some
    /// columns under the axis (index, text).
    static func columns(
        title: String, values: [(total: Int, bad: Int, title: String)], marks: [(Int, String)], width: Int = 864, height: Int = 180
    ) -> SVGChart {
        let plotTop = 18
        let plotHeight = height - plotTop - 22
        let largest = max(values.map(\.total).max() ?? 0, 1)
        let step = max(width / max(values.count, 1), 1)
        var bars: [Bar] = []
        for (index, value) in values.enumerated() where value.total > 0 || value.bad > 0 {
            let total = max(1, value.total * plotHeight / largest)
            bars.append(Bar(x: index * step, y: plotTop + plotHeight - total, width: max(step - 1, 1), height: total, tone: "bar", title: value.title))
            if value.bad > 0 {
                let bad = max(1, value.bad * plotHeight / largest)
                bars.append(Bar(x: index * step, y: plotTop + plotHeight - bad, width: max(step - 1, 1), height: bad, tone: "bad", title: value.title))
            }
        }
        var labels = [Label(x: 0, y: 12, text: "max \(largest)", anchor: "start")]
        labels += marks.map { Label(x: $0.0 * step, y: height - 6, text: $0.1, anchor: "start") }
        return SVGChart(width: width, height: height, title: title, bars: bars, labels: labels)
    }

    /// Horizontal bars, one per (name, count), largest first.
    static func rows(title: String, _ counts: [(String, Int)], width: Int = 864) -> SVGChart {
        let sorted = counts.sorted { ($0.1, $1.0) > ($1.1, $0.0) }
        let largest = max(sorted.map(\.1).max() ?? 0, 1)
        let labelWidth = 240
        var bars: [Bar] = []
        var labels: [Label] = []
        for (index, (name, count)) in sorted.enumerated() {
            let y = 6 + index * 24
            let length = max(1, count * (width - labelWidth - 60) / largest)
            bars.append(Bar(x: labelWidth, y: y, width: length, height: 18, tone: "bad", title: "\(name): \(count)"))
            labels.append(Label(x: labelWidth - 8, y: y + 13, text: name, anchor: "end"))
            labels.append(Label(x: labelWidth + length + 6, y: y + 13, text: "\(count)", anchor: "start"))
        }
        return SVGChart(width: width, height: max(30, 12 + sorted.count * 24), title: title, bars: bars, labels: labels)
    }
}
