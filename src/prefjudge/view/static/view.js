// prefjudge view: lists, filters and details of scored samples and judge verdicts.
// Every text from a record goes into the page through textContent (never innerHTML).
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("pj-data").textContent);
  var STEP = 200;
  var KEYS = ["model", "task", "cat", "status", "checks", "verdict", "q", "sample", "pair"];
  var state = {};
  var limit = { samples: STEP, pairs: STEP };
  var hay = Object.create(null);  // no prototype: a record's text can be any key

  // -- building blocks ------------------------------------------------------------------

  function own(obj, key) {
    return obj !== null && typeof obj === "object" && Object.prototype.hasOwnProperty.call(obj, key);
  }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function field(obj, key) { return own(obj, key) ? obj[key] : undefined; }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, tag, cls, text) {
    var node = el(tag, cls, text);
    parent.appendChild(node);
    return node;
  }
  function absent(why) { return el("span", "absent", why ? "absent (" + why + ")" : "absent"); }
  function value(v) {
    if (v === undefined || v === null) return absent();
    if (typeof v === "object") return el("code", "json", JSON.stringify(v));
    if (v === "") return el("span", "empty", "(empty)");
    return el("span", null, String(v));
  }
  function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-"); }
  function badge(s) {
    if (s === undefined || s === null) return el("span", "badge b-absent", "absent");
    return el("span", "badge b-" + slug(s), String(s));
  }
  function node(v) { return v instanceof Node ? v : value(v); }
  function facts(parent, rows) {
    var dl = add(parent, "dl", "facts");
    rows.forEach(function (row) {
      add(dl, "dt", null, row[0]);
      add(dl, "dd").appendChild(node(row[1]));
    });
    return dl;
  }
  function textBlock(parent, label, text, why) {
    var box = add(parent, "div", "block");
    add(box, "h4", null, label);
    if (typeof text === "string") add(box, "pre", "text", text);
    else box.appendChild(absent(why));
    return box;
  }
  function table(parent, heads, rows, rowClass) {
    var t = add(parent, "table", "grid");
    var head = add(add(t, "thead"), "tr");
    heads.forEach(function (h) { add(head, "th", null, h); });
    var body = add(t, "tbody");
    rows.forEach(function (cells, i) {
      var tr = add(body, "tr", rowClass ? rowClass(i) : null);
      cells.forEach(function (cell) { add(tr, "td").appendChild(node(cell)); });
    });
    return t;
  }
  function reasonCell(obj, key) {
    if (!own(obj, key)) return absent();
    var text = obj[key];
    if (text === "" || text === null) return el("span", "empty", "(none given)");
    return el("span", null, String(text));
  }
  function otherFields(parent, rec, known) {
    var other = Object.create(null);
    Object.keys(rec).forEach(function (k) { if (known.indexOf(k) < 0) other[k] = rec[k]; });
    if (Object.keys(other).length) textBlock(parent, "other fields", JSON.stringify(other, null, 2));
  }

  // -- one scored sample ------------------------------------------------------------------

  var SAMPLE_FIELDS = ["id", "task_id", "model", "response", "instructions", "protocol", "k",
    "sample", "turns", "error", "prompt", "instruction_results", "if_instruction", "if_task",
    "func", "turn_results", "meta"];

  function checkRows(checks) {
    return checks.map(function (c) {
      var id = field(c, "id");
      return [id, own(DATA.categories, id) ? DATA.categories[id] : "unknown", field(c, "params"),
        badge(field(c, "status")), reasonCell(c, "reason")];
    });
  }

  function buildSample(box, s) {
    var r = s.record;
    facts(box, [["model", field(r, "model")], ["task", field(r, "task_id")], ["id", field(r, "id")],
      ["protocol", field(r, "protocol")], ["k", field(r, "k")], ["sample", field(r, "sample")],
      ["file", s.file + ":" + s.line]]);
    var prompt = field(r, "prompt");
    var task = field(r, "task_id");
    if (typeof prompt === "string") textBlock(box, "prompt (from the record)", prompt);
    else if (own(DATA.prompts, task)) textBlock(box, "prompt (the task's)", DATA.prompts[task]);
    else textBlock(box, "prompt", null, "not in the record, and no task file gave one");
    var turns = field(r, "turns");
    if (Array.isArray(turns) && turns.length) {
      add(box, "h4", null, "turns (" + turns.length + ")");
      turns.forEach(function (t, i) {
        var turn = add(box, "div", "turn");
        facts(turn, [["turn", field(t, "index") === undefined ? i + 1 : t.index],
          ["instruction added", field(t, "instruction")], ["error", field(t, "error")]]);
        textBlock(turn, "user", typeof field(t, "prompt") === "string" ? t.prompt : null);
        textBlock(turn, "model", typeof field(t, "response") === "string" ? t.response : null);
      });
    }
    var response = field(r, "response");
    textBlock(box, "response", typeof response === "string" ? response : null, "no response field");
    if (field(r, "error")) textBlock(box, "generation error", String(r.error));

    add(box, "h4", null, "instruction checks");
    var checks = field(r, "instruction_results");
    if (Array.isArray(checks) && checks.length) {
      table(box, ["instruction", "category", "params", "status", "reason"], checkRows(checks));
    } else {
      add(box, "p").appendChild(absent(checks === undefined ? "no instruction_results field"
        : "no instructions were checked"));
    }
    facts(box, [["IF, instruction-level", field(r, "if_instruction")],
      ["IF, task-level", field(r, "if_task")]]);

    add(box, "h4", null, "functional tests");
    var func = field(r, "func");
    if (isObj(func)) {
      facts(box, [["status", badge(field(func, "status"))]]);
      textBlock(box, "detail / output", typeof field(func, "detail") === "string" ? func.detail : null,
        "no detail");
    } else {
      add(box, "p").appendChild(absent(func === null ? "no tests known for this task"
        : "no func field"));
    }
    var turnResults = field(r, "turn_results");
    if (Array.isArray(turnResults) && turnResults.length) {
      add(box, "h4", null, "checks per turn (retention)");
      turnResults.forEach(function (checksAtTurn, i) {
        add(box, "div", "note", "after turn " + (i + 1));
        if (Array.isArray(checksAtTurn) && checksAtTurn.length) {
          table(box, ["instruction", "category", "params", "status", "reason"],
            checkRows(checksAtTurn));
        } else {
          add(box, "p").appendChild(absent("no checks"));
        }
      });
    }
    var meta = field(r, "meta");
    if (isObj(meta) && Object.keys(meta).length) {
      add(box, "h4", null, "meta");
      facts(box, Object.keys(meta).map(function (k) { return [k, meta[k]]; }));
    }
    otherFields(box, r, SAMPLE_FIELDS);
  }

  // -- one judged pair --------------------------------------------------------------------

  var VERDICT_FIELDS = ["pair_id", "task_id", "model_a", "model_b", "method", "status", "winner",
    "preferred", "orders", "position_consistent", "reasons", "criteria", "decisive",
    "inconsistency_rate", "refined", "scores", "label", "category", "error", "warnings",
    "judge_model", "guidance", "evidence", "cost", "facts", "decided_by"];

  function surviving(cv) {
    var outcome = field(cv, "outcome");
    if (outcome !== undefined && outcome !== null) return badge(outcome);
    if (outcome === undefined) return absent();
    var fwd = field(cv, "forward"), swp = field(cv, "swapped");
    if (fwd === undefined || fwd === null || swp === undefined || swp === null) {
      return el("span", "badge b-dropped", "dropped: an order gave none");
    }
    return el("span", "badge b-dropped", "dropped: the orders disagree");
  }

  // the evidence facts section (view_facts.js, earlier in the same script element)
  var evidenceFacts = pjEvidenceFacts({ el: el, add: add, absent: absent, badge: badge,
    facts: facts, table: table, textBlock: textBlock, reasonCell: reasonCell, field: field,
    isObj: isObj });

  function buildPair(box, p) {
    var r = p.record, pair = p.pair;
    var orders = field(r, "orders");
    facts(box, [["pair", field(r, "pair_id")], ["task", field(r, "task_id")],
      ["method", field(r, "method")], ["judge model", field(r, "judge_model")],
      ["guidance", field(r, "guidance")], ["evidence given to the judge", field(r, "evidence")],
      ["category", field(r, "category")], ["file", p.file + ":" + p.line]]);
    add(box, "h4", null, "final verdict");
    facts(box, [["verdict", badge(p.verdict)], ["winner", field(r, "winner")],
      ["status", field(r, "status")],
      ["forward order (A shown first)", isObj(orders) ? field(orders, "forward") : undefined],
      ["swapped order (B shown first)", isObj(orders) ? field(orders, "swapped") : undefined],
      ["position-consistent", field(r, "position_consistent")],
      ["human label", field(r, "label")],
      ["criteria flipped by the swap", field(r, "inconsistency_rate")],
      ["tied criteria refined", field(r, "refined")], ["scores", field(r, "scores")],
      ["cost", field(r, "cost")]]);
    var reasons = field(r, "reasons");
    if (isObj(reasons) && Object.keys(reasons).length) {
      Object.keys(reasons).forEach(function (order) {
        textBlock(box, "reason (" + order + ")", typeof reasons[order] === "string"
          ? reasons[order] : null);
      });
    } else {
      textBlock(box, "reason", null, "the verdict gives none");
    }
    if (field(r, "error")) textBlock(box, "error", String(r.error));
    var warnings = field(r, "warnings");
    if (Array.isArray(warnings) && warnings.length) {
      add(box, "h4", null, "warnings");
      var ul = add(box, "ul");
      warnings.forEach(function (w) { add(ul, "li", null, w); });
    }

    evidenceFacts(box, r);
    var instruction = pair ? field(pair, "instruction") : undefined;
    var task = field(r, "task_id");
    if (typeof instruction === "string") textBlock(box, "request (from the pair)", instruction);
    else if (own(DATA.prompts, task)) textBlock(box, "request (the task's prompt)", DATA.prompts[task]);
    else textBlock(box, "request", null, "no pair or task file gave it");

    pairSides(box, p);
    pairCriteria(box, r);
    otherFields(box, r, VERDICT_FIELDS);
  }

  function pairSides(box, p) {
    var r = p.record, pair = p.pair;
    var sides = add(box, "div", "sides");
    ["a", "b"].forEach(function (x) {
      var col = add(sides, "div", "side side-" + x);
      var model = field(r, "model_" + x);
      add(col, "h4", null, "response " + x.toUpperCase() + " \u2014 " +
        (model === undefined ? "model absent" : model));
      var text = pair ? field(pair, "response_" + x) : undefined;
      if (typeof text === "string") add(col, "pre", "text", text);
      else col.appendChild(absent(p.pair_source || "no pair found"));
      var evidence = pair ? field(pair, "evidence_" + x) : undefined;
      if (Array.isArray(evidence) && evidence.length) {
        add(col, "h4", null, "evidence");
        var list = add(col, "ul");
        evidence.forEach(function (e) { add(list, "li", null, e); });
      } else {
        add(col, "div", "note").appendChild(absent(pair ? "no evidence" : "evidence: no pair"));
      }
    });
    add(box, "p", "note", "responses from: " + (p.pair_source || "absent"));
  }

  function pairCriteria(box, r) {
    var criteria = field(r, "criteria");
    var decisive = field(r, "decisive");
    var decisiveIds = Array.isArray(decisive) ? decisive.map(String) : [];
    add(box, "h4", null, "criteria");
    if (Array.isArray(criteria) && criteria.length) {
      var rows = criteria.map(function (cv) {
        var c = isObj(field(cv, "criterion")) ? cv.criterion : {};
        var id = field(c, "id");
        var parent = field(c, "parent");
        return [parent ? String(id) + " (refines " + parent + ")" : id, field(c, "text"),
          badge(field(cv, "forward")), badge(field(cv, "swapped")), surviving(cv),
          decisiveIds.indexOf(String(id)) >= 0 ? "decisive" : el("span", "empty", "\u2014"),
          reasonCell(cv, "reason_forward"), reasonCell(cv, "reason_swapped")];
      });
      table(box, ["id", "criterion", "forward", "swapped", "surviving", "decisive",
        "reason (forward)", "reason (swapped)"], rows, function (i) {
        return rows[i][5] === "decisive" ? "decisive" : null;
      });
    } else {
      add(box, "p").appendChild(absent(criteria === undefined ? "no criteria field"
        : "this method has no criteria"));
    }
    add(box, "h4", null, "decisive criteria");
    if (decisiveIds.length) {
      var texts = Object.create(null);
      (Array.isArray(criteria) ? criteria : []).forEach(function (cv) {
        if (isObj(field(cv, "criterion"))) texts[String(cv.criterion.id)] = cv.criterion.text;
      });
      var dl = add(box, "ul", "decisive-list");
      decisiveIds.forEach(function (id) {
        add(dl, "li", null, id + ": " + (own(texts, id) ? texts[id] : "(not among the criteria)"));
      });
    } else {
      add(box, "p").appendChild(absent(decisive === undefined ? "no decisive field"
        : "the synthesis named none"));
    }
  }

  // -- lists, filters, the URL fragment ---------------------------------------------------

  function sampleRow(s) {
    var r = s.record;
    var d = el("details", "item sample");
    d.setAttribute("data-uid", s.uid);
    d.setAttribute("data-id", String(field(r, "id") === undefined ? "" : r.id));
    d.setAttribute("data-model", String(r.model));
    d.setAttribute("data-task", String(r.task_id));
    d.setAttribute("data-status", s.status);
    var sum = add(d, "summary");
    add(sum, "span", "model", r.model);
    add(sum, "span", "task", r.task_id);
    var proto = [field(r, "protocol"), field(r, "k") === undefined ? undefined : "k=" + r.k]
      .filter(function (x) { return x !== undefined && x !== null; }).join(" ");
    add(sum, "span", "proto", proto || "\u2014");
    var checks = Array.isArray(field(r, "instruction_results")) ? r.instruction_results : [];
    var passed = checks.filter(function (c) { return c && c.status === "pass"; }).length;
    var cs = add(sum, "span", "checks");
    cs.appendChild(badge(s.checks === "none" ? "none" : s.checks));
    cs.appendChild(document.createTextNode(" " + passed + "/" + checks.length + " checks pass"));
    add(sum, "span", "tests").appendChild(badge(s.status));
    return d;
  }

  function pairRow(p) {
    var r = p.record;
    var d = el("details", "item pair");
    d.setAttribute("data-uid", p.uid);
    d.setAttribute("data-id", String(r.pair_id));
    d.setAttribute("data-model-a", String(r.model_a));
    d.setAttribute("data-model-b", String(r.model_b));
    d.setAttribute("data-verdict", p.verdict);
    var sum = add(d, "summary");
    add(sum, "span", "pair-id", r.pair_id);
    add(sum, "span", "task", r.task_id);
    add(sum, "span", "models", r.model_a + "  vs  " + r.model_b);
    add(sum, "span", "method", field(r, "method"));
    add(sum, "span", "verdict").appendChild(badge(p.verdict));
    var pc = field(r, "position_consistent");
    add(sum, "span", "consistency", pc === true ? "consistent" : pc === false ? "orders differ" : "\u2014");
    return d;
  }

  function listHead(kind) {
    var head = el("div", "list-head " + (kind === "samples" ? "sample" : "pair"));
    (kind === "samples" ? ["model", "task", "protocol", "instruction checks", "tests"]
      : ["pair", "task", "models (A vs B)", "method", "verdict", "orders"])
      .forEach(function (h) { add(head, "span", null, h); });
    return head;
  }

  function build(d, kind, item) {
    if (d.getAttribute("data-built")) return;
    d.setAttribute("data-built", "1");
    var box = add(d, "div", "body");
    if (kind === "samples") buildSample(box, item); else buildPair(box, item);
  }

  function haystack(item) {
    if (!own(hay, item.uid)) {
      var rec = Object.create(null);  // everything but the run's bookkeeping (meta, cost)
      Object.keys(item.record).forEach(function (k) {
        if (k !== "meta" && k !== "cost") rec[k] = item.record[k];
      });
      hay[item.uid] = (JSON.stringify(rec) + " " + JSON.stringify(item.pair || null))
        .toLowerCase();
    }
    return hay[item.uid];
  }

  function sampleMatches(s) {
    var r = s.record;
    if (state.model && r.model !== state.model) return false;
    if (state.task && String(r.task_id) !== state.task) return false;
    if (state.cat && s.categories.indexOf(state.cat) < 0) return false;
    if (state.status && s.status !== state.status) return false;
    if (state.checks && s.checks !== state.checks) return false;
    if (state.q && haystack(s).indexOf(state.q.toLowerCase()) < 0) return false;
    return true;
  }

  function pairMatches(p) {
    var r = p.record;
    if (state.model && r.model_a !== state.model && r.model_b !== state.model) return false;
    if (state.task && String(r.task_id) !== state.task) return false;
    if (state.verdict && p.verdict !== state.verdict) return false;
    if (state.q && haystack(p).indexOf(state.q.toLowerCase()) < 0) return false;
    return true;
  }

  function isTarget(item, kind, target) {
    if (!target) return false;
    if (item.uid === target) return true;
    var id = field(item.record, kind === "samples" ? "id" : "pair_id");
    return id !== undefined && id !== null && String(id) === target;
  }

  var matched = { samples: 0, pairs: 0 };
  var shownCount = { samples: 0, pairs: 0 };

  function render(kind) {
    var items = kind === "samples" ? DATA.samples : DATA.pairs;
    var matches = items.filter(kind === "samples" ? sampleMatches : pairMatches);
    var target = state[kind === "samples" ? "sample" : "pair"];
    var last = -1;
    matches.forEach(function (item, i) { if (isTarget(item, kind, target)) last = i; });
    var n = Math.min(matches.length, Math.max(limit[kind], last + 1));
    var list = document.getElementById(kind);
    list.textContent = "";
    if (n) list.appendChild(listHead(kind));
    var opened = null;
    for (var i = 0; i < n; i++) {
      var item = matches[i];
      var d = kind === "samples" ? sampleRow(item) : pairRow(item);
      (function (d, item) {
        d.addEventListener("toggle", function () {
          var key = kind === "samples" ? "sample" : "pair";
          var id = d.getAttribute("data-id") || item.uid;
          if (d.open) {
            build(d, kind, item);
            if (state[key] !== id) { state[key] = id; writeFragment(); }
          } else if (state[key] === id || state[key] === item.uid) {
            state[key] = "";
            writeFragment();
          }
        });
      })(d, item);
      if (isTarget(item, kind, target)) {
        build(d, kind, item);
        d.open = true;
        opened = opened || d;
      }
      list.appendChild(d);
    }
    matched[kind] = matches.length;
    shownCount[kind] = n;
    var noun = kind === "samples" ? "scored samples" : "judged pairs";
    var count = document.getElementById(kind + "-count");
    if (!items.length) count.textContent = "No " + noun + " were found in the results.";
    else count.textContent = matches.length + " of " + items.length + " " + noun + " match" +
      (n < matches.length ? "; the first " + n + " are listed" : "");
    var more = document.getElementById(kind + "-more");
    more.hidden = n >= matches.length;
    more.textContent = "show " + Math.min(STEP, matches.length - n) + " more (" +
      (matches.length - n) + " not listed)";
    return opened;
  }

  function renderAll() {
    var a = render("samples");
    var b = render("pairs");
    var st = document.getElementById("pj-state");
    st.setAttribute("data-ready", "1");
    st.setAttribute("data-samples-matched", String(matched.samples));
    st.setAttribute("data-samples-shown", String(shownCount.samples));
    st.setAttribute("data-pairs-matched", String(matched.pairs));
    st.setAttribute("data-pairs-shown", String(shownCount.pairs));
    var active = KEYS.filter(function (k) { return state[k]; });
    st.textContent = "samples: " + matched.samples + " of " + DATA.samples.length +
      " match \u00b7 pairs: " + matched.pairs + " of " + DATA.pairs.length + " match" +
      (active.length ? " \u00b7 filters: " + active.map(function (k) {
        return k + "=" + state[k];
      }).join(", ") : "");
    document.title = DATA.title + " \u2014 " + matched.samples + " samples, " + matched.pairs +
      " pairs" + (active.length ? " (filtered)" : "");
    var target = a || b;
    if (target && target.scrollIntoView) target.scrollIntoView();
  }

  function readFragment() {
    var fresh = {};
    KEYS.forEach(function (k) { fresh[k] = ""; });
    [location.search.replace(/^\?/, ""), location.hash.replace(/^#/, "")].forEach(function (text) {
      text.split("&").forEach(function (part) {
        if (!part) return;
        var at = part.indexOf("=");
        var key, val;
        try {
          key = decodeURIComponent(at < 0 ? part : part.slice(0, at));
          val = at < 0 ? "" : decodeURIComponent(part.slice(at + 1).replace(/\+/g, " "));
        } catch (e) { return; }
        if (own(fresh, key)) fresh[key] = val;
      });
    });
    state = fresh;
  }

  function writeFragment() {
    var parts = KEYS.filter(function (k) { return state[k]; }).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(state[k]);
    });
    try {
      history.replaceState(null, "", location.pathname + location.search +
        (parts.length ? "#" + parts.join("&") : "#"));
    } catch (e) { /* some file: URLs refuse it; the filters still apply */ }
  }

  var CONTROLS = { model: "f-model", task: "f-task", cat: "f-cat", status: "f-status",
    checks: "f-checks", verdict: "f-verdict", q: "f-q" };

  function fillSelect(id, values, current) {
    var select = document.getElementById(id);
    var counts = Object.create(null);
    values.forEach(function (v) { counts[v] = (counts[v] || 0) + 1; });
    var keys = Object.keys(counts).sort();
    if (current && keys.indexOf(current) < 0) keys.push(current);
    keys.forEach(function (v) {
      select.appendChild(new Option(v + (counts[v] ? " (" + counts[v] + ")" : " (none)"), v));
    });
  }

  function setControls() {
    Object.keys(CONTROLS).forEach(function (k) {
      var control = document.getElementById(CONTROLS[k]);
      if (control.tagName === "SELECT" && state[k] &&
          !Array.prototype.some.call(control.options, function (o) { return o.value === state[k]; })) {
        control.appendChild(new Option(state[k] + " (none)", state[k]));
      }
      control.value = state[k];
    });
  }

  function init() {
    readFragment();
    var models = [], tasks = [], cats = [], statuses = [], checks = [], verdicts = [];
    DATA.samples.forEach(function (s) {
      models.push(String(s.record.model));
      tasks.push(String(s.record.task_id));
      Array.prototype.push.apply(cats, s.categories);
      statuses.push(s.status);
      checks.push(s.checks);
    });
    DATA.pairs.forEach(function (p) {
      models.push(String(p.record.model_a), String(p.record.model_b));
      tasks.push(String(p.record.task_id));
      verdicts.push(p.verdict);
    });
    fillSelect("f-model", models);
    fillSelect("f-task", tasks);
    fillSelect("f-cat", cats);
    fillSelect("f-status", statuses);
    fillSelect("f-checks", checks);
    fillSelect("f-verdict", verdicts);
    setControls();
    Object.keys(CONTROLS).forEach(function (k) {
      var control = document.getElementById(CONTROLS[k]);
      var typing = null;
      function apply() {
        state[k] = control.value;
        state.sample = "";
        state.pair = "";
        limit = { samples: STEP, pairs: STEP };
        writeFragment();
        renderAll();
      }
      if (control.tagName === "SELECT") {
        control.addEventListener("change", apply);
      } else {  // free text: wait for a pause in typing
        control.addEventListener("input", function () {
          clearTimeout(typing);
          typing = setTimeout(apply, 250);
        });
      }
    });
    document.getElementById("filters").addEventListener("submit", function (e) {
      e.preventDefault();
    });
    document.getElementById("f-clear").addEventListener("click", function () {
      KEYS.forEach(function (k) { state[k] = ""; });
      setControls();
      writeFragment();
      renderAll();
    });
    ["samples", "pairs"].forEach(function (kind) {
      document.getElementById(kind + "-more").addEventListener("click", function () {
        limit[kind] += STEP;
        render(kind);
      });
    });
    window.addEventListener("hashchange", function () {
      readFragment();
      setControls();
      renderAll();
    });
    renderAll();
  }

  init();
})();
