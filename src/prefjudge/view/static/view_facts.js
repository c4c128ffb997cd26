// prefjudge view: a verdict's evidence facts, and an efficiency fact's cost curves.
// Loaded before view.js in the page's one script element; view.js calls pjEvidenceFacts with
// its building blocks and gets the function that adds a verdict's "evidence facts" section.
// Every text goes into the page through textContent, the plot through createElementNS
// (never innerHTML): a fact's text can hold pieces of model output.
var pjEvidenceFacts = function (h) {
  "use strict";
  var el = h.el, add = h.add, absent = h.absent, badge = h.badge, facts = h.facts;
  var table = h.table, textBlock = h.textBlock, reasonCell = h.reasonCell, field = h.field;
  var isObj = h.isObj;

  var SVG = "http://www.w3.org/2000/svg";
  var SIDES = ["A", "B"];

  function finite(v) { return typeof v === "number" && isFinite(v) ? v : null; }
  function seconds(v) {  // as the fact's text writes a time: us, ms or s
    var s = finite(v);
    if (s === null) return null;
    if (s < 1e-3) return (s * 1e6).toFixed(0) + " us";
    return s < 1 ? (s * 1000).toFixed(1) + " ms" : s.toFixed(2) + " s";
  }
  function timeCell(v) { var t = seconds(v); return t === null ? absent() : el("span", "num", t); }
  function scaleName(factor) {
    var f = finite(factor);
    return f === null ? String(factor) : "x" + String(f).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function growthText(slope) {
    var g = finite(slope);
    return g === null ? absent("not fitted: fewer than two distinct scales") : "about n^" + g.toFixed(1);
  }
  function svg(parent, tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) node.textContent = String(text);
    parent.appendChild(node);
    return node;
  }

  function curvePoints(scales) {  // [{factor, A, B}] of the scales with a usable factor
    return scales.filter(function (pt) {
      var f = finite(field(pt, "factor"));
      return f !== null && f > 0 && isObj(field(pt, "per_call_s"));
    }).map(function (pt) {
      return { factor: pt.factor, A: finite(field(pt.per_call_s, "A")),
        B: finite(field(pt.per_call_s, "B")) };
    });
  }

  function logRange(values, pad) {  // [low, high] of log10(values), widened by pad of the span
    var lo = Math.log10(Math.min.apply(null, values)), hi = Math.log10(Math.max.apply(null, values));
    if (hi - lo < 1e-9) return [lo - 0.5, hi + 0.5];
    return [lo - pad * (hi - lo), hi + pad * (hi - lo)];
  }

  function curvePlot(parent, points) {
    var times = [];
    points.forEach(function (pt) {
      SIDES.forEach(function (side) { if (pt[side] !== null && pt[side] > 0) times.push(pt[side]); });
    });
    if (points.length < 2 || !times.length) return null;
    var W = 380, H = 230, L = 70, R = 50, T = 14, B = 40;
    var xs = logRange(points.map(function (pt) { return pt.factor; }), 0), ys = logRange(times, 0.06);
    function x(f) {
      return +(L + (Math.log10(f) - xs[0]) / (xs[1] - xs[0]) * (W - L - R)).toFixed(1);
    }
    function y(t) {
      return +(H - B - (Math.log10(t) - ys[0]) / (ys[1] - ys[0]) * (H - T - B)).toFixed(1);
    }
    var plot = svg(parent, "svg", { "class": "curve-plot", width: W, height: H,
      viewBox: "0 0 " + W + " " + H, role: "img" });
    svg(plot, "title", {}, "time per call against the input's scale (log-log), A and B");
    svg(plot, "path", { "class": "axis", d: "M" + L + " " + T + "V" + (H - B) + "H" + (W - R) });
    points.forEach(function (pt) {
      svg(plot, "text", { "class": "tick", x: x(pt.factor), y: H - B + 14, "text-anchor": "middle" },
        scaleName(pt.factor));
    });
    [Math.min.apply(null, times), Math.max.apply(null, times)].forEach(function (t) {
      svg(plot, "text", { "class": "tick", x: L - 4, y: y(t) + 4, "text-anchor": "end" }, seconds(t));
    });
    svg(plot, "text", { "class": "tick", x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" },
      "input scale (x the seed input)");
    SIDES.forEach(function (side) {
      var pts = points.filter(function (pt) { return pt[side] !== null && pt[side] > 0; });
      var cls = "side-" + side.toLowerCase();
      svg(plot, "polyline", { "class": "curve " + cls, "data-side": side, fill: "none",
        points: pts.map(function (pt) { return x(pt.factor) + "," + y(pt[side]); })
          .join(" ") });
      pts.forEach(function (pt) {
        svg(plot, "circle", { "class": "dot " + cls, cx: x(pt.factor), cy: y(pt[side]),
          r: 3 });
      });
      var lastPt = pts[pts.length - 1];
      if (lastPt) {
        svg(plot, "text", { "class": "label " + cls, x: x(lastPt.factor) + 6,
          y: y(lastPt[side]) + 4 }, side);
      }
    });
    return plot;
  }

  function costCurves(parent, f, detail) {
    var scales = field(detail, "scales");
    if (!Array.isArray(scales) || scales.length < 2) return;
    var box = add(parent, "div", "cost-curves");
    add(box, "h4", null, "efficiency: cost per call at each input scale");
    var rows = scales.map(function (pt) {
      var per = isObj(field(pt, "per_call_s")) ? pt.per_call_s : {};
      var ratio = finite(field(pt, "ratio")), pv = finite(field(pt, "p_value"));
      return [scaleName(field(pt, "factor")), timeCell(field(per, "A")), timeCell(field(per, "B")),
        ratio === null ? absent() : ratio.toFixed(2), pv === null ? absent() : pv.toPrecision(2),
        field(pt, "rounds"), badge(field(pt, "outcome")), reasonCell(pt, "fact")];
    });
    table(box, ["input scale", "A per call", "B per call", "dearer / cheaper", "p-value", "rounds",
      "decision at this scale", "at this scale"], rows).classList.add("curve-table");
    var growth = field(detail, "growth");
    var inputs = field(detail, "perf_inputs");
    facts(box, [["growth of A", growthText(isObj(growth) ? field(growth, "A") : null)],
      ["growth of B", growthText(isObj(growth) ? field(growth, "B") : null)],
      ["inputs", isObj(inputs) ? String(field(inputs, "strategy")) + " of " +
        String(field(inputs, "seed")) : undefined],
      ["the pair's decision", badge(field(f, "outcome"))]]);
    curvePlot(box, curvePoints(scales));
  }

  function evidenceFacts(box, r) {
    var list = field(r, "facts"), decidedBy = field(r, "decided_by");
    if (!(Array.isArray(list) && list.length) && (decidedBy === undefined || decidedBy === null)) {
      return;
    }
    var section = add(box, "div", "evidence-facts");
    add(section, "h4", null, "evidence facts");
    facts(section, [["decided by", decidedBy]]);
    if (!Array.isArray(list) || !list.length) {
      add(section, "p").appendChild(absent("the verdict has no facts"));
      return;
    }
    var decisive = typeof decidedBy === "string" && decidedBy.indexOf("evidence:") === 0
      ? decidedBy.slice("evidence:".length).split("+") : [];
    var rows = list.map(function (f) {
      var source = field(f, "source");
      return [field(f, "kind"), badge(field(f, "outcome")), reasonCell(f, "fact"),
        source ? String(source) : el("span", "empty", "judged here")];
    });
    table(section, ["kind", "outcome", "fact", "source"], rows, function (i) {
      return "fact" + (decisive.indexOf(field(list[i], "kind")) >= 0 ? " decisive" : "");
    }).classList.add("facts-table");
    list.forEach(function (f) {
      var detail = field(f, "detail");
      if (field(f, "kind") === "efficiency" && isObj(detail)) costCurves(section, f, detail);
    });
    list.forEach(function (f) {
      var detail = field(f, "detail");
      if (isObj(detail) && Object.keys(detail).length) {
        textBlock(section, "detail (" + field(f, "kind") + ")", JSON.stringify(detail));
      }
    });
  }

  return evidenceFacts;
};
