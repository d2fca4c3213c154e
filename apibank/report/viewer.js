// The API-Bank results viewer. Every string from the run goes into the page as a text node
// (textContent / createTextNode), never as markup: model outputs are untrusted.
(function () {
  "use strict";
  var pageErrors = [];
  window.addEventListener("error", function (event) {
    pageErrors.push(String(event.message));
    document.documentElement.setAttribute("data-errors", pageErrors.join(" | "));
  });

  var DATA = JSON.parse(document.getElementById("run-data").textContent);
  var PAGE = 100;
  var COLORS = ["#2f5ea8", "#d9822b", "#2e9d6a", "#b3261e", "#7b5ea7", "#8c6d31", "#c2549d", "#5a7d8c",
    "#9aa83a", "#3b9bb3", "#e0a526", "#6b6b6b", "#a0522d", "#4c7c3f"];

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (attrs[key] !== null && attrs[key] !== undefined) node.setAttribute(key, String(attrs[key]));
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  function svg(tag, attrs, text) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, String(attrs[key])); });
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function pre(value) {
    var text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    return el("pre", {}, text === undefined ? "null" : text);
  }
  function pct(x) { return x === null || x === undefined ? "-" : (100 * x).toFixed(2) + "%"; }
  function known(x) { return x === null || x === undefined ? "unknown" : x; }
  function num(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d === undefined ? 4 : d); }
  function interval(ci, asPct, reason) {
    if (!Array.isArray(ci) || ci.length !== 2 || ci[0] === null) return reason ? el("div", { "class": "ci" }, reason) : null;
    var f = asPct ? function (v) { return (100 * v).toFixed(1); } : function (v) { return Number(v).toFixed(3); };
    return el("div", { "class": "ci" }, "95% CI [" + f(ci[0]) + ", " + f(ci[1]) + "]");
  }
  function uniq(values) {
    var seen = {};
    return values.filter(function (v) { if (v === null || v === undefined || seen[v]) return false; seen[v] = 1; return true; }).sort();
  }
  function levelsOf(scores) {
    var found = {};
    Object.keys(scores).forEach(function (p) {
      Object.keys(scores[p] || {}).forEach(function (l) { if (/^level-/.test(l)) found[l] = 1; });
    });
    return Object.keys(found).sort();
  }
  function protocolsOf(scores) {
    return Object.keys(scores).filter(function (p) { return scores[p] && typeof scores[p] === "object" && levelsOf({ x: scores[p] }).length; });
  }

  // ---- plots (inline SVG) ----
  var colorOf = (function () {  // one colour per name across the whole page
    var given = {}, next = 0;
    return function (name) {
      if (!(name in given)) given[name] = COLORS[next++ % COLORS.length];
      return given[name];
    };
  })();
  function legend(names) {
    return el("div", { "class": "legend" }, names.map(function (name) {
      return el("span", {}, el("span", { "class": "swatch", style: "background:" + colorOf(name) }), name);
    }));
  }
  function groupedBars(title, groups, series, values, intervals) {
    // values[s][g] in 0..1; intervals[s][g] = [low, high] or null
    var w = 120 + groups.length * (series.length * 34 + 30), h = 230, top = 18, bottom = 30, left = 40;
    var root = svg("svg", { width: w, height: h, role: "img", "aria-label": title });
    var y = function (v) { return top + (h - top - bottom) * (1 - v); };
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      root.appendChild(svg("line", { x1: left, x2: w - 8, y1: y(t), y2: y(t), stroke: "#e3e6ea" }));
      root.appendChild(svg("text", { x: left - 4, y: y(t) + 4, "font-size": 10, "text-anchor": "end" }, 100 * t));
    });
    groups.forEach(function (group, g) {
      var x0 = left + 14 + g * (series.length * 34 + 30);
      series.forEach(function (name, s) {
        var v = values[s][g];
        if (v === null || v === undefined) return;
        var x = x0 + s * 34;
        root.appendChild(svg("rect", { x: x, y: y(v), width: 28, height: y(0) - y(v), fill: colorOf(name) }));
        root.appendChild(svg("text", { x: x + 14, y: y(v) - 3, "font-size": 9, "text-anchor": "middle" }, (100 * v).toFixed(1)));
        var ci = intervals && intervals[s][g];
        if (ci && ci[0] !== null) {
          root.appendChild(svg("line", { x1: x + 14, x2: x + 14, y1: y(ci[0]), y2: y(ci[1]), stroke: "#111", "stroke-width": 1.2 }));
          [ci[0], ci[1]].forEach(function (b) {
            root.appendChild(svg("line", { x1: x + 9, x2: x + 19, y1: y(b), y2: y(b), stroke: "#111", "stroke-width": 1.2 }));
          });
        }
      });
      root.appendChild(svg("text", { x: x0 + series.length * 17 - 3, y: h - 10, "font-size": 11, "text-anchor": "middle" }, group));
    });
    return el("div", { "class": "plot" }, el("div", { "class": "plot-title" }, title), root, legend(series));
  }
  function stackedBars(title, groups, counts) {
    // counts[g] = {name: count}
    var names = uniq([].concat.apply([], counts.map(function (c) { return Object.keys(c || {}); })));
    var max = Math.max(1, Math.max.apply(null, counts.map(function (c) {
      return Object.keys(c || {}).reduce(function (a, k) { return a + c[k]; }, 0);
    })));
    var w = 70 + groups.length * 70, h = 230, top = 14, bottom = 30, left = 36;
    var root = svg("svg", { width: w, height: h, role: "img", "aria-label": title });
    var y = function (v) { return top + (h - top - bottom) * (1 - v / max); };
    root.appendChild(svg("text", { x: left - 4, y: y(max) + 4, "font-size": 10, "text-anchor": "end" }, max));
    root.appendChild(svg("line", { x1: left, x2: w - 4, y1: y(0), y2: y(0), stroke: "#999" }));
    groups.forEach(function (group, g) {
      var x = left + 12 + g * 70, base = 0;
      names.forEach(function (name) {
        var v = (counts[g] || {})[name] || 0;
        if (!v) return;
        var rect = svg("rect", { x: x, y: y(base + v), width: 40, height: y(base) - y(base + v), fill: colorOf(name) });
        rect.appendChild(svg("title", {}, name + ": " + v));
        root.appendChild(rect);
        base += v;
      });
      root.appendChild(svg("text", { x: x + 20, y: y(base) - 3, "font-size": 10, "text-anchor": "middle" }, base));
      root.appendChild(svg("text", { x: x + 20, y: h - 10, "font-size": 11, "text-anchor": "middle" }, group));
    });
    return el("div", { "class": "plot" }, el("div", { "class": "plot-title" }, title),
      names.length ? [root, legend(names)] : el("div", { "class": "empty" }, "no errors"));
  }
  function horizontalBars(title, entries) {
    // entries: [{label, value, text}] sorted, value in 0..1
    var h = 20 + entries.length * 18, w = 430, left = 170;
    var root = svg("svg", { width: w, height: h, role: "img", "aria-label": title });
    entries.forEach(function (e, i) {
      var y = 8 + i * 18;
      root.appendChild(svg("text", { x: left - 6, y: y + 11, "font-size": 11, "text-anchor": "end" }, e.label));
      root.appendChild(svg("rect", { x: left, y: y + 2, width: Math.max(1, (w - left - 70) * e.value), height: 12, fill: COLORS[0] }));
      root.appendChild(svg("text", { x: left + (w - left - 70) * e.value + 4, y: y + 12, "font-size": 10 }, e.text));
    });
    return el("div", { "class": "plot" }, el("div", { "class": "plot-title" }, title),
      entries.length ? root : el("div", { "class": "empty" }, "no errors"));
  }

  // ---- sample browser (shared by both views) ----
  function browser(container, items, filters, columns, detail) {
    var state = {}, shown = PAGE;
    var params = new URLSearchParams((location.hash || "").replace(/^#/, ""));
    var expand = params.get("expand") === "1";  // open every shown row (printing, tests)
    var controls = el("div", { "class": "filters" });
    filters.forEach(function (f) {
      var values = uniq([].concat.apply([], items.map(function (it) { var v = f.get(it); return Array.isArray(v) ? v : [v]; })));
      var select = el("select", { id: "filter-" + f.key, "data-filter": f.key }, el("option", { value: "" }, "all"),
        values.map(function (v) { return el("option", { value: v }, v); }));
      var wanted = params.get(f.key);
      if (wanted !== null && values.indexOf(wanted) >= 0) { select.value = wanted; state[f.key] = wanted; }
      select.addEventListener("change", function () { state[f.key] = select.value; update(true); });
      controls.appendChild(el("label", {}, f.label, select));
    });
    var search = el("input", { id: "filter-text", type: "search", placeholder: "id, tool, output..." });
    if (params.get("q")) { search.value = params.get("q"); state.q = params.get("q"); }
    search.addEventListener("input", function () { state.q = search.value; update(true); });
    controls.appendChild(el("label", {}, "text", search));
    var count = el("div", { "class": "count" });
    var body = el("tbody");
    var table = el("table", { "class": "samples" },
      el("thead", {}, el("tr", {}, columns.map(function (c) { return el("th", {}, c.label); }))), body);
    var more = el("button", { type: "button", id: "show-more" }, "show more");
    more.addEventListener("click", function () { shown += PAGE; update(false); });
    append(container, [controls, count, table, more]);

    function matches(it) {
      for (var i = 0; i < filters.length; i++) {
        var want = state[filters[i].key];
        if (!want) continue;
        var v = filters[i].get(it);
        if (Array.isArray(v) ? v.indexOf(want) < 0 : String(v) !== want) return false;
      }
      if (state.q) {
        var q = state.q.toLowerCase();
        if (detailText(it).toLowerCase().indexOf(q) < 0) return false;
      }
      return true;
    }
    function update(reset) {
      if (reset) shown = PAGE;
      var selected = items.filter(matches);
      var hash = new URLSearchParams();
      Object.keys(state).forEach(function (k) { if (state[k]) hash.set(k, state[k]); });
      if (expand) hash.set("expand", "1");
      if (reset && history.replaceState) history.replaceState(null, "", "#" + hash.toString());
      count.textContent = "";
      append(count, [el("span", { id: "shown-count" }, selected.length), " of " + items.length + " shown"]);
      body.textContent = "";
      selected.slice(0, shown).forEach(function (it) {
        var row = el("tr", { "class": "row" }, columns.map(function (c) {
          var v = c.get(it);
          return el("td", { "class": c.cls ? c.cls(it) : null }, v === null || v === undefined ? "-" : v);
        }));
        var open = null;
        function toggle() {
          if (open) { open.remove(); open = null; return; }
          open = el("tr", { "class": "detail" }, el("td", { colspan: columns.length }, detail(it)));
          row.after(open);
        }
        row.addEventListener("click", toggle);
        body.appendChild(row);
        if (expand) toggle();
      });
      more.style.display = selected.length > shown ? "" : "none";
    }
    function detailText(it) {
      if (!it.__text) it.__text = columns.map(function (c) { return String(c.get(it)); }).join(" ") + " " + (it.__search ? it.__search() : "");
      return it.__text;
    }
    update(false);
  }
  function fields(pairs) {
    return el("div", { "class": "fields" }, pairs.filter(function (p) { return p[1] !== undefined; }).map(function (p) {
      var value = p[1] === null ? el("div", { "class": "empty" }, "(none)") : p[1] instanceof Node ? p[1] : pre(p[1]);
      return [el("div", { "class": "key" }, p[0]), el("div", {}, value)];
    }));
  }

  // ---- classic runs ----
  function promptText(data, id) {
    var record = data.predictions[id];
    if (!record || !record.prompt) return null;
    return record.prompt.map(function (i) { return data.lines[i]; }).join("\n");
  }
  function classicDetail(data) {
    return function (s) {
      var record = data.predictions[s.id] || {}, gold = data.gold[s.id];
      var prompt = promptText(data, s.id);
      var rows = [
        ["prompt", prompt === null ? "(not in predictions.jsonl)" : el("details", {}, el("summary", {}, prompt.split("\n").length + " lines"), pre(prompt))],
        ["prediction", record.prediction === undefined ? "(none)" : record.prediction],
      ];
      if (record.raw_output !== null && record.raw_output !== undefined) rows.push(["raw output", record.raw_output]);
      if (s.kind === "api") {
        rows.push(["parsed call", s.extracted_call], ["arguments", s.arguments], ["executed, returned", s.result]);
        if (s.error) rows.push(["error", s.error]);
        if (s.retrieved) rows.push(["retrieved", s.retrieved]);
      } else {
        rows.push(["ROUGE-L", num(s.score)]);
      }
      if (gold) {
        if (gold.api_name) rows.push(["gold call", { api_name: gold.api_name, arguments: gold.arguments }], ["gold result", gold.result]);
        rows.push(["gold text", gold.text]);
      }
      return fields(rows);
    };
  }
  function classicSummary(results, id, cellClass) {
    var scores = results.scores || {}, protocols = protocolsOf(scores), levels = levelsOf(scores);
    var cols = levels.concat(protocols.some(function (p) { return scores[p].overall; }) ? ["overall"] : []);
    var metrics = [["api", "API call accuracy"], ["dialogues", "Dialogue accuracy"], ["response", "Response ROUGE-L"]];
    var body = [];
    protocols.forEach(function (p) {
      metrics.forEach(function (m, mi) {
        body.push(el("tr", {}, el("td", {}, mi === 0 ? p : ""), el("td", {}, m[1]), cols.map(function (level) {
          var block = (scores[p][level] || {})[m[0]];
          if (!block) return el("td", { "class": "num" }, "-");
          var attrs = { "class": cellClass || "num score", "data-protocol": p, "data-level": level, "data-metric": m[0] };
          if (m[0] === "response") {
            attrs["data-count"] = block.count;
            return el("td", attrs, num(block.rouge_l) + " (n=" + block.count + ")", interval(block.ci95, false, block.ci95_reason));
          }
          attrs["data-correct"] = block.correct; attrs["data-total"] = block.total;
          return el("td", attrs, pct(block.accuracy) + " (" + block.correct + "/" + block.total + ")", interval(block.ci95, true, block.ci95_reason));
        })));
      });
    });
    return el("table", { id: id || "summary" }, el("thead", {}, el("tr", {}, el("th", {}, "protocol"), el("th", {}, "metric"),
      cols.map(function (c) { return el("th", { "class": "num" }, c); }))), el("tbody", {}, body));
  }
  function classicErrors(results) {
    var scores = results.scores || {}, protocols = protocolsOf(scores), levels = levelsOf(scores);
    var out = [el("h2", {}, "Error analysis")];
    var plots = el("div", { "class": "plots" });
    plots.appendChild(groupedBars("API call accuracy (%) with 95% interval", levels, protocols,
      protocols.map(function (p) { return levels.map(function (l) { return ((scores[p][l] || {}).api || {}).accuracy; }); }),
      protocols.map(function (p) { return levels.map(function (l) { return ((scores[p][l] || {}).api || {}).ci95 || null; }); })));
    var typed = protocols.some(function (p) { return levels.some(function (l) { return (scores[p][l] || {}).error_types; }); });
    protocols.forEach(function (p) {
      var key = typed ? "error_types" : "errors";
      plots.appendChild(stackedBars((typed ? "paper error types" : "error categories") + " (" + p + ")", levels,
        levels.map(function (l) { return (scores[p][l] || {})[key] || {}; })));
    });
    out.push(plots);
    var tools = el("div", { "class": "plots" });
    out.push(tools);
    protocols.forEach(function (p) {
      var calls = {}, errors = {};
      (DATA.samples || []).forEach(function (s) {
        if (s.protocol !== p || s.kind !== "api" || !s.tool) return;
        calls[s.tool] = (calls[s.tool] || 0) + 1;
        if (s.verdict === "wrong") errors[s.tool] = (errors[s.tool] || 0) + 1;
      });
      var entries = Object.keys(errors).map(function (t) {
        return { label: t, value: errors[t] / calls[t], text: errors[t] + "/" + calls[t] };
      }).sort(function (a, b) { return b.value - a.value || a.label.localeCompare(b.label); }).slice(0, 15);
      tools.appendChild(horizontalBars("per-tool error rate (" + p + ", top 15)", entries));
    });
    return out;
  }
  function subsetFlags(r) {
    var flags = [];
    if (r.audit_subset) flags.push("--subset " + r.audit_subset);
    if (r.limit) flags.push("--limit " + r.limit);
    if (r.kinds && r.kinds.length === 1) flags.push("--kinds " + r.kinds[0]);
    return flags.join(" ") || "partial predictions";
  }
  function leftOut(verified) {
    var parts = [];
    Object.keys(verified.excluded || {}).forEach(function (level) {
      Object.keys(verified.excluded[level]).forEach(function (status) {
        parts.push(level + " " + status + " " + verified.excluded[level][status]);
      });
    });
    return parts.join(", ") || "none";
  }
  function classicView(app) {
    var r = DATA.results, model = r.model || {};
    append(app, [el("h1", {}, "API-Bank: " + model.id),
      el("p", { "class": "meta" }, "format " + known(r.format) + " · backend " + known(model.backend) + " · apibank " + r.apibank_version +
        " · " + r.date + (r.subset ? " · SUBSET (" + subsetFlags(r) + ")" : "")),
      el("h2", {}, "Summary"), classicSummary(r)]);
    if (r.verified && !r.audit_subset) {
      var audit = r.verified.audit || {};
      append(app, [el("h2", {}, "Verified subset (separate from the summary above)"),
        el("p", { "class": "meta" }, "the rows the row audit (version " + audit.version + ") marks verified, judged as in " +
          "the summary; left out: " + leftOut(r.verified)),
        classicSummary({ scores: r.verified.scores }, "verified-summary", "num verified-score")]);
    }
    append(app, classicErrors(r));
    append(app, el("h2", {}, "Samples"));
    DATA.samples.forEach(function (s) {
      s.__search = function () { var p = DATA.predictions[s.id] || {}; return (p.prediction || "") + " " + (s.extracted_call || ""); };
    });
    var section = el("div", { id: "samples" });
    app.appendChild(section);
    var hasTypes = DATA.samples.some(function (s) { return s.error_type; });
    var filters = [
      { key: "protocol", label: "protocol", get: function (s) { return s.protocol; } },
      { key: "level", label: "level", get: function (s) { return s.level; } },
      { key: "kind", label: "kind", get: function (s) { return s.kind; } },
      { key: "verdict", label: "verdict", get: function (s) { return s.verdict; } },
      { key: "category", label: "category", get: function (s) { return s.category; } },
    ];
    if (hasTypes) filters.push({ key: "type", label: "error type", get: function (s) { return s.error_type; } });
    filters.push({ key: "tool", label: "tool", get: function (s) { return s.tool; } });
    browser(section, DATA.samples, filters, [
      { label: "id", get: function (s) { return s.id; }, cls: function () { return "id"; } },
      { label: "protocol", get: function (s) { return s.protocol; } },
      { label: "level", get: function (s) { return s.level; } },
      { label: "kind", get: function (s) { return s.kind; } },
      { label: "tool", get: function (s) { return s.tool; } },
      { label: "verdict", get: function (s) { return s.kind === "response" ? "ROUGE-L " + num(s.score, 3) : s.verdict; },
        cls: function (s) { return "v-" + s.verdict; } },
      { label: "category", get: function (s) { return s.error_type ? s.category + " (" + s.error_type + ")" : s.category; } },
    ], classicDetail(DATA));
  }

  // ---- agentic runs ----
  var FIGURES = [["success_rate", "success", true], ["pass_k", "pass^k", true], ["pass_at_k", "pass@k", true],
    ["call_precision", "call precision", true], ["call_recall", "call recall", true],
    ["response_rouge_l", "response ROUGE-L", false], ["mean_steps", "mean steps", null]];
  function messageView(m) {
    var parts = [el("div", { "class": "role" }, m.role + (m.name ? " · " + m.name : ""))];
    if (m.content) parts.push(pre(m.content));
    (m.tool_calls || []).forEach(function (c) { parts.push(pre((c["function"] || {}).name + " " + ((c["function"] || {}).arguments || ""))); });
    return el("div", { "class": "msg " + m.role }, parts);
  }
  function episodeDetail(e) {
    var v = e.verdict || {};
    return fields([
      ["verdict", { success: v.success, state_ok: v.state_ok, information_ok: v.information_ok, rouge_l: v.rouge_l,
        gold_calls: v.gold_calls, model_calls: v.model_calls, matched_calls: v.matched_calls, stopped: e.stopped }],
      ["state difference", v.state_diff && Object.keys(v.state_diff).length ? v.state_diff : "(none: the final state equals the gold replay's)"],
      ["missing information", v.missing],
      ["conversation", el("details", { open: "" }, el("summary", {}, (e.messages || []).length + " messages"), (e.messages || []).map(messageView))],
      ["executed calls", el("div", {}, (e.trajectory || []).map(function (step, i) {
        return el("div", { "class": "msg tool" }, el("div", { "class": "role" }, "call " + (i + 1) + " · " + step.name),
          pre({ arguments: step.arguments, result: step.result, error: step.error }));
      }))],
      ["final answers", e.answers],
    ]);
  }
  function agenticSummary(summaries, levels, id, cellClass) {
    var head = el("tr", {}, el("th", {}, "level"), el("th", { "class": "num" }, "episodes"), el("th", { "class": "num" }, "runs"),
      FIGURES.map(function (f) { return el("th", { "class": "num" }, f[1]); }));
    var rows = levels.map(function (level) {
      var s = summaries[level], ci = s.ci95 || {};
      return el("tr", {}, el("td", {}, level),
        el("td", { "class": cellClass, "data-level": level, "data-metric": "episodes" }, s.episodes),
        el("td", { "class": cellClass, "data-level": level, "data-metric": "succeeded", "data-correct": s.succeeded, "data-total": s.runs }, s.runs),
        FIGURES.map(function (f) {
          var v = s[f[0]];
          return el("td", { "class": "num" }, f[2] === true ? pct(v) : num(v, f[2] === null ? 2 : 4), interval(ci[f[0]], f[2] === true, s.ci95_reason));
        }));
    });
    return el("table", { id: id }, el("thead", {}, head), el("tbody", {}, rows));
  }
  function agenticView(app) {
    var r = DATA.results, model = r.model || {}, levels = Object.keys(r.levels || {}).sort();
    append(app, [el("h1", {}, "API-Bank agentic: " + model.id),
      el("p", { "class": "meta" }, "setting " + r.setting + " · backend " + model.backend + " · trials " + r.trials + " · " + r.date),
      el("h2", {}, "Summary")]);
    app.appendChild(agenticSummary(r.levels, levels, "summary", "num score"));
    var verified = (r.verified || {}).levels;
    if (verified) {
      var kept = Object.keys(verified).sort();
      append(app, [el("h2", {}, "Verified subset (separate from the summary above)"),
        el("p", { "class": "meta" }, "the episodes whose every test row the row audit (version " + (r.verified.audit || {}).version +
          ") marks verified; " + kept.map(function (l) { return l + ": " + verified[l].episodes_left_out + " left out, " +
          verified[l].episodes_without_rows + " without test rows"; }).join("; ")),
        agenticSummary(verified, kept, "verified-summary", "num verified-score")]);
    }
    app.appendChild(el("h2", {}, "Error analysis"));
    var reasons = levels.map(function (level) {
      var c = {};
      DATA.episodes.forEach(function (e) { if (e.level === level) e.categories.forEach(function (k) { c[k] = (c[k] || 0) + 1; }); });
      return c;
    });
    app.appendChild(el("div", { "class": "plots" },
      groupedBars("success rate (%) with 95% interval", levels, ["success"], [levels.map(function (l) { return r.levels[l].success_rate; })],
        [levels.map(function (l) { return (r.levels[l].ci95 || {}).success_rate || null; })]),
      stackedBars("why episodes failed", levels, reasons)));
    app.appendChild(el("h2", {}, "Episodes"));
    var section = el("div", { id: "samples" });
    app.appendChild(section);
    DATA.episodes.forEach(function (e) { e.__search = function () { return JSON.stringify(e.messages || []); }; });
    browser(section, DATA.episodes, [
      { key: "level", label: "level", get: function (e) { return e.level; } },
      { key: "verdict", label: "verdict", get: function (e) { return e.verdict_label; } },
      { key: "category", label: "failure", get: function (e) { return e.categories; } },
      { key: "tool", label: "tool called", get: function (e) { return e.tools; } },
    ], [
      { label: "episode", get: function (e) { return e.episode; }, cls: function () { return "id"; } },
      { label: "trial", get: function (e) { return e.trial; } },
      { label: "steps", get: function (e) { return e.steps; } },
      { label: "verdict", get: function (e) { return e.verdict_label; }, cls: function (e) { return "v-" + e.verdict_label; } },
      { label: "failure", get: function (e) { return e.categories.join(", "); } },
      { label: "tools", get: function (e) { return e.tools.join(", "); } },
    ], episodeDetail);
  }

  // ---- comparisons ----
  function sideView(run, flip, protocol) {
    if (!run || run.missing) return el("div", { "class": "empty" }, "run folder not available");
    if (run.view === "agentic") {
      var eps = run.episodes.filter(function (e) { return String(e.episode) === String(flip.id); });
      return eps.length ? episodeDetail(eps[0]) : el("div", { "class": "empty" }, "episode not found");
    }
    var samples = run.samples.filter(function (s) {
      return s.protocol === protocol && (s.id === flip.id || s.id.split("#")[0] === flip.id);
    });
    if (!samples.length) return el("div", { "class": "empty" }, "sample not found");
    return el("div", {}, samples.map(function (s) {
      return el("div", {}, el("h3", {}, s.id + " · " + s.verdict), classicDetail(run)(s));
    }));
  }
  function compareView(app) {
    app.appendChild(el("h1", {}, "API-Bank: comparison"));
    DATA.pairs.forEach(function (pair) {
      var c = pair.comparison, a = c.a || {}, b = c.b || {};
      app.appendChild(el("h2", {}, "A = " + a.model + "  vs  B = " + b.model));
      app.appendChild(el("p", { "class": "meta" }, "A: " + a.path + " · B: " + b.path + ((c.mismatch || []).length ? " · differs: " + c.mismatch.join("; ") : "")));
      app.appendChild(el("table", {}, el("thead", {}, el("tr", {}, ["protocol", "level", "metric", "n", "A", "B", "B-A", "95% CI", "p", "flipped +B/-B"].map(function (h) { return el("th", {}, h); }))),
        el("tbody", {}, (c.comparisons || []).map(function (e) {
          var flips = e.flipped_samples || [];
          return el("tr", {}, el("td", {}, e.protocol), el("td", {}, e.level), el("td", {}, e.metric),
            el("td", { "class": "num" }, e.n), el("td", { "class": "num" }, num(e.a)), el("td", { "class": "num" }, num(e.b)),
            el("td", { "class": "num" }, num(e.difference)), el("td", { "class": "num" }, Array.isArray(e.ci95) ? "[" + num(e.ci95[0]) + ", " + num(e.ci95[1]) + "]" : (e.ci95_reason || "-")),
            el("td", { "class": "num" }, typeof e.p === "number" ? "p=" + Number(e.p.toPrecision(2)) : "-"), el("td", { "class": "num" }, flips.filter(function (f) { return f.direction === "gained"; }).length + "/" + flips.filter(function (f) { return f.direction === "lost"; }).length));
        }))));
      var flips = [];
      (c.comparisons || []).forEach(function (e) {
        (e.flipped_samples || []).forEach(function (f) { flips.push({ id: f.id, direction: f.direction, category: f.category, tool: f.tool, protocol: e.protocol, level: e.level, metric: e.metric }); });
      });
      var section = el("div", { "class": "flips" });
      app.appendChild(el("h3", {}, "flipped samples (" + flips.length + ")"));
      app.appendChild(section);
      browser(section, flips, [
        { key: "protocol", label: "protocol", get: function (f) { return f.protocol; } },
        { key: "level", label: "level", get: function (f) { return f.level; } },
        { key: "verdict", label: "direction", get: function (f) { return f.direction; } },
        { key: "category", label: "category", get: function (f) { return f.category; } },
        { key: "tool", label: "tool", get: function (f) { return f.tool; } },
      ], [
        { label: "id", get: function (f) { return f.id; }, cls: function () { return "id"; } },
        { label: "protocol", get: function (f) { return f.protocol; } },
        { label: "metric", get: function (f) { return f.metric; } },
        { label: "direction", get: function (f) { return f.direction; }, cls: function (f) { return "v-" + f.direction; } },
        { label: "category", get: function (f) { return f.category; } },
        { label: "tool", get: function (f) { return f.tool; } },
      ], function (f) {
        return el("div", { "class": "side" }, el("div", {}, el("h3", {}, "A: " + a.model), sideView(pair.runs.a, f, f.protocol)),
          el("div", {}, el("h3", {}, "B: " + b.model), sideView(pair.runs.b, f, f.protocol)));
      });
    });
  }

  // ---- leaderboards ----
  var RATES = { api: 1, dialogue: 1, success: 1, pass_k: 1, pass_at_k: 1 };
  function figureCell(key, cell) {
    if (!cell) return el("td", { "class": "num", "data-sort": "" }, "-");
    var rate = RATES[key], shown = rate ? pct(cell.value) : num(cell.value);
    var count = cell.total !== undefined && cell.correct !== undefined && cell.correct !== null ? " (" + cell.correct + "/" + cell.total + ")" : "";
    return el("td", { "class": "num", "data-sort": cell.value, "data-figure": key }, shown + count,
      interval(cell.ci95, !!rate, cell.ci95_reason));
  }
  function sortable(table) {
    // Click a header to sort by it (again: the other way); the URL hash (sort=LABEL&dir=asc|desc) sorts every table.
    var heads = table.querySelectorAll("th");
    function sortBy(index, descending) {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[index].getAttribute("data-sort"), y = b.cells[index].getAttribute("data-sort");
        var nx = x === "" || x === null || isNaN(Number(x)) ? null : Number(x), ny = y === "" || y === null || isNaN(Number(y)) ? null : Number(y);
        var order = nx !== null && ny !== null ? nx - ny : nx !== null ? 1 : ny !== null ? -1 : String(x).localeCompare(String(y));
        return descending ? -order : order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
      Array.prototype.forEach.call(heads, function (h, i) { h.setAttribute("aria-sort", i === index ? (descending ? "descending" : "ascending") : "none"); });
    }
    Array.prototype.forEach.call(heads, function (h, i) {
      h.classList.add("sortable");
      h.addEventListener("click", function () { sortBy(i, h.getAttribute("aria-sort") === "ascending"); });
    });
    var params = new URLSearchParams((location.hash || "").replace(/^#/, ""));
    var wanted = params.get("sort");
    Array.prototype.forEach.call(heads, function (h, i) { if (wanted && h.textContent === wanted) sortBy(i, params.get("dir") === "desc"); });
    return table;
  }
  function plainTable(headers, rows, attrs) {
    return el("table", attrs || {}, el("thead", {}, el("tr", {}, headers.map(function (h) { return el("th", {}, h); }))),
      el("tbody", {}, rows));
  }
  function boardTable(t, number) {
    var heads = ["rank", "run"].concat(t.figures.map(function (f) { return f.label; }), ["source"]);
    var rows = t.rows.map(function (r) {
      var name = r.report ? el("a", { href: r.report }, r.run) : r.run;
      return el("tr", { "class": "run-row", "data-run": r.run, "data-rank": r.rank }, el("td", { "class": "num", "data-sort": r.rank }, r.rank),
        el("td", { "data-sort": r.run }, name), t.figures.map(function (f) { return figureCell(f.key, r.cells[f.key]); }),
        el("td", { "data-sort": "run here" }, "run here"));
    }).concat(t.references.map(function (r) {
      var source = r.status + ": " + r.source + (r.recompute ? "; " + r.recompute : "");
      return el("tr", { "class": "reported", "data-run": r.model }, el("td", { "class": "num", "data-sort": "" }, "-"),
        el("td", { "data-sort": r.model }, r.model), t.figures.map(function (f) { return figureCell(f.key, r.cells[f.key]); }),
        el("td", { "data-sort": source }, source));
    }));
    return sortable(plainTable(heads, rows, { "class": "board", id: "board-" + number }));
  }
  function boardTitle(t) {
    return (t.group !== null ? "group " + t.group : "reported elsewhere") + ": " + (t.kind === "agentic" ? "setting " : "protocol ") +
      t.protocol + ", " + t.level + (t.subset_label ? " (" + t.subset_label + ")" : t.subset ? " (subset)" : "");
  }
  function matrixTable(t) {
    var names = t.rows.map(function (r) { return r.run; }), cells = {};
    t.matrix.pairs.forEach(function (p) { cells[p.row + "\u0000" + p.column] = p; });
    return plainTable(["row - column"].concat(names), names.map(function (row) {
      return el("tr", {}, el("td", {}, row), names.map(function (column) {
        var p = cells[row + "\u0000" + column];
        if (!p) return el("td", {}, "");
        var ci = Array.isArray(p.ci95) ? " [" + (100 * p.ci95[0]).toFixed(2) + ", " + (100 * p.ci95[1]).toFixed(2) + "]" : "";
        return el("td", { "class": "num pair", "data-p": p.p, "data-p-holm": p.p_holm, "data-n": p.n },
          (p.difference >= 0 ? "+" : "") + (100 * p.difference).toFixed(2) + ci,
          el("div", { "class": "ci" }, "p=" + p.p_shown + " · Holm p=" + p.p_holm_shown + " · n=" + p.n));
      }));
    }), { "class": "matrix" });
  }
  function leaderboardView(app) {
    var board = DATA.board, number = 0;
    var on = board.ranked_on || { rows: "full" };
    append(app, [el("h1", {}, "API-Bank leaderboard"), el("p", { "class": "meta" },
      board.groups.length + " group(s) of runs that share their samples; reference rows are never ranked"),
      el("p", { "class": "meta", id: "ranked-on" }, on.rows === "full" ? "ranked on: the full benchmark (every scored row)" :
        "ranked on: the " + on.rows + " subset (row audit " + (on.audit || {}).version + "), never the full benchmark")]);
    board.kept_apart.forEach(function (k) {
      append(app, el("p", { "class": "meta kept-apart" }, "kept apart: " + k.run + " is group " + k.group + " (" + k.reasons.join(" | ") + ")"));
    });
    var sections = board.groups.map(function (g) { return g.number; }).concat([null]);
    sections.forEach(function (group) {
      board.tables.filter(function (t) { return t.group === group; }).forEach(function (t) {
        app.appendChild(el("h2", {}, boardTitle(t)));
        app.appendChild(boardTable(t, number++));
        if (t.matrix.pairs.length) {
          app.appendChild(el("h3", {}, "paired " + t.matrix.metric + " differences (points), Holm-adjusted over the table's pairs"));
          app.appendChild(matrixTable(t));
        }
      });
      var g = board.groups.filter(function (x) { return x.number === group; })[0];
      if (!g) return;
      var keys = DATA.resource_columns.map(function (c) { return c[0]; });
      app.appendChild(el("h3", {}, "group " + group + ": resources"));
      app.appendChild(sortable(plainTable(["run"].concat(DATA.resource_columns.map(function (c) { return c[1]; })), g.resources.map(function (r) {
        return el("tr", {}, el("td", { "data-sort": r.run }, r.run), keys.map(function (k) {
          var missing = r[k] === null || r[k] === undefined, note = k === "wall_seconds" && r.wall_note ? " (" + r.wall_note + ")" : "";
          return el("td", { "class": "num", "data-sort": missing ? "" : r[k] }, missing ? "-" : r[k] + note);
        }));
      }), { "class": "resources" })));
    });
  }

  var app = document.getElementById("app");
  ({ classic: classicView, agentic: agenticView, compare: compareView, leaderboard: leaderboardView })[DATA.view](app);
  document.documentElement.setAttribute("data-ready", "1");
  document.documentElement.setAttribute("data-render-ms", Math.round(performance.now()));
})();
