"""基金研究助手 — a long Chinese conversation (≥100 pairs) for the demo.

A retail investor researches a shortlist of (fictional) funds with an
assistant: fees, NAV on given dates, drawdowns, managers, redemption fees,
and a plan. The investor corrects the investment horizon (3 → 5 years) and
withdraws an earlier statement about risk tolerance; one early answer has a
later, corrected version (ingested only with ``--edit-after-compaction``).
The middle of the session walks the shortlist fund by fund; those turns are
composed from the fund table below with several hand-written phrasings per
topic, so the figures differ from turn to turn like a real research session.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, clarify, note, tool

# Fictional funds: code, name, kind, management fee, custody fee, subscription
# fee, manager, inception, size (亿元), NAV on 2026-11-20, 1-year return,
# max drawdown and when, top-10 concentration.
FUNDS = [
    ("017235", "澄海稳健增利债券A", "债券型", 0.30, 0.10, 0.60, "林书扬", "2019-03-18", 42.6, 1.2874, 3.62, -1.84, "2022年11月", 38.5),
    ("006481", "远岭沪深300指数增强A", "指数增强型", 0.80, 0.15, 1.20, "周可宁", "2018-11-06", 18.3, 1.6532, 11.47, -24.90, "2021年2月至2022年10月", 29.7),
    ("011092", "北辰科技创新混合", "偏股混合型", 1.20, 0.20, 1.50, "韩叙", "2021-01-27", 9.7, 0.7418, 18.05, -46.30, "2021年2月至2024年2月", 61.2),
    ("014507", "青禾中短债C", "中短债", 0.25, 0.08, 0.00, "许映秋", "2022-02-10", 61.2, 1.0931, 2.41, -0.37, "2022年12月", 21.4),
    ("008163", "南屿红利低波ETF联接A", "指数型", 0.50, 0.10, 1.00, "钱卓", "2019-12-02", 27.5, 1.4106, 9.83, -15.20, "2020年1月至2020年3月", 33.9),
    ("005599", "恒川全球医疗QDII", "QDII", 1.50, 0.30, 1.20, "苏曼", "2018-05-14", 6.1, 1.1327, 4.96, -31.80, "2021年6月至2022年6月", 47.6),
    ("010318", "松原均衡配置混合", "平衡混合型", 1.00, 0.20, 1.50, "孟庭远", "2020-09-08", 33.4, 1.0552, 6.71, -19.60, "2021年12月至2022年4月", 41.3),
    ("009876", "和泰纯债一年定开", "定期开放债券型", 0.20, 0.05, 0.40, "程一诺", "2020-06-30", 80.0, 1.0418, 3.05, -0.92, "2022年11月", 18.8),
]

NAV_DATES = ["2026-10-31", "2026-11-06", "2026-11-13", "2026-11-20"]
# Relative NAV moves on those dates, per fund (basis points), so each fund's path differs.
NAV_MOVES = [
    (-31, -18, -6, 0), (-212, -95, 64, 0), (-530, 122, -260, 0), (-9, -4, -2, 0),
    (-140, -77, 31, 0), (189, -240, -58, 0), (-66, -120, 18, 0), (-12, -7, -3, 0),
]


def _nav(i: int, date_index: int) -> str:
    base = FUNDS[i][9]
    return f"{base * (1 + NAV_MOVES[i][date_index] / 10000):.4f}"


def _fee_turn(i: int):
    code, name, kind, mgmt, cust, sub, *_ = FUNDS[i]
    sales = "另收销售服务费0.30%/年，按日计提，" if name.endswith("C") else ""
    discount = f"平台申购费一折后为{sub * 0.1:.2f}%" if sub else "C类份额不收申购费"
    users = [f"{name}（{code}）的费率是多少？", f"帮我拆一下{code}一年下来的持有成本。", f"{name}贵不贵？说说管理费和托管费。"]
    total = mgmt + cust + (0.30 if name.endswith("C") else 0)
    return ask(
        users[i % 3],
        f"{name}（{code}，{kind}）：管理费{mgmt:.2f}%/年，托管费{cust:.2f}%/年，{sales}"
        f"申购费原费率{sub:.2f}%，{discount}。只算运作费用，每年持有成本约{total:.2f}%，"
        f"这部分已从净值中扣除，不会另外扣款。",
    )


def _nav_turn(i: int):
    code, name, *_ = FUNDS[i]
    d = i % 3
    first, last = _nav(i, d), _nav(i, 3)
    change = (float(last) / float(first) - 1) * 100
    users = [f"{code}在{NAV_DATES[d]}的单位净值是多少？和上周五比呢？",
             f"查一下{name}最近的净值走势。",
             f"{name}从{NAV_DATES[d]}到现在涨了还是跌了？"]
    return tool(
        users[i % 3],
        [Call("query_nav", {"fund_code": code, "from": NAV_DATES[d], "to": "2026-11-20"},
              json.dumps({"fund_code": code, "nav": {NAV_DATES[d]: first, "2026-11-20": last}}))],
        f"{name}单位净值：{NAV_DATES[d]}为{first}，2026-11-20为{last}，区间{'上涨' if change >= 0 else '下跌'}"
        f"{abs(change):.2f}%。注意这是单位净值，期间如有分红，应看累计净值或复权净值。",
    )


def _drawdown_turn(i: int):
    code, name, kind, *_, mdd, when, _top = FUNDS[i][:14]
    calm = "波动很小，适合做底仓" if mdd > -3 else ("波动中等" if mdd > -20 else "波动很大，不适合短期要用的钱")
    users = [f"{name}最大回撤多少？", f"{code}最惨的时候跌了多少？", f"说说{name}的回撤情况。"]
    return ask(
        users[(i + 1) % 3],
        f"{name}成立以来最大回撤{mdd:.2f}%，发生在{when}。作为{kind}，{calm}。"
        f"按您的期限来看，能承受这种回撤再决定配多少。",
    )


def _manager_turn(i: int):
    code, name, kind, _m, _c, _s, manager, inception, *_ = FUNDS[i]
    years = 2026 - int(inception[:4])
    users = [f"{name}的基金经理是谁？换过人吗？", f"{code}是谁在管？", f"{manager}管这只基金多久了？"]
    changed = i % 3 == 1
    return ask(
        users[i % 3],
        f"{name}现任基金经理是{manager}。"
        + (f"基金{inception}成立，{manager}是2023年4月接任的，之前的业绩不完全代表他的风格。"
           if changed else f"基金{inception}成立至今约{years}年都由{manager}管理，没有更换过。"),
    )


def _size_turn(i: int):
    code, name, *_rest = FUNDS[i]
    size = FUNDS[i][8]
    verdict = "规模偏小，低于5亿要留意清盘风险" if size < 10 else ("规模适中" if size < 50 else "规模较大，流动性好")
    users = [f"{name}规模多大？", f"{code}有多少亿？会不会太小？"]
    return ask(users[i % 2], f"截至2026年三季报，{name}资产规模{size:.1f}亿元，{verdict}。")


def _redeem_turn(i: int):
    code, name, kind, *_ = FUNDS[i]
    if "定期开放" in kind:
        text = (f"{name}是一年定开，封闭期内不能赎回，下一个开放期是2027年7月1日至7月14日。"
                "开放期赎回不收赎回费，错过就要再等一年。")
    elif "债" in kind:
        text = f"{name}赎回费：不满7天1.50%，7天至30天0.10%，满30天免收。您持有5年，不受影响。"
    elif name.endswith("C"):
        text = f"{name}持有不满7天收1.50%赎回费，满7天不收。C类适合一年以内的闲钱。"
    else:
        text = (f"{name}赎回费：不满7天1.50%，7天至1年0.50%，1年至2年0.25%，满2年免收。"
                "您计划持有5年，赎回费可以忽略。")
    users = [f"{code}赎回要收多少钱？", f"{name}持有多久赎回不收费？"]
    return ask(users[i % 2], text)


def _holdings_turn(i: int):
    code, name, kind, *_ = FUNDS[i]
    top = FUNDS[i][13]
    users = [f"{name}前十大持仓集中吗？", f"{code}的持仓集中度怎么样？"]
    level = "集中度偏高，单一行业波动会放大" if top > 45 else ("集中度中等" if top > 25 else "持仓分散")
    return ask(users[(i + 1) % 2], f"根据2026年三季报，{name}前十大持仓合计占基金资产净值的{top:.1f}%，{level}。")


def _sip_turn(i: int):
    code, name, _k, _m, _c, sub, *_ = FUNDS[i]
    amount = (500, 800, 1000, 1500, 2000, 3000)[i % 6]
    fee = amount * sub * 0.1 / 100
    users = [f"如果每月定投{amount}元到{code}，每次申购费多少？", f"{name}每月投{amount}，手续费怎么算？"]
    return ask(
        users[i % 2],
        f"按平台一折，{name}申购费率{sub * 0.1:.2f}%，每月{amount}元定投每次手续费约{fee:.2f}元"
        f"（按净额法计算会略少一点），一年约{fee * 12:.2f}元。" + ("C类不收申购费，这一项为0。" if not sub else ""),
    )


def _dividend_turn(i: int):
    code, name, kind, *_ = FUNDS[i]
    users = [f"{name}分红吗？", f"{code}最近一次分红是什么时候？"]
    if "债" in kind:
        per = (0.012, 0.008, 0.015)[i % 3]
        text = (f"{name}近三年每年分红1至2次，最近一次在2026年9月{10 + i}日，每10份派{per * 10:.3f}元。"
                "分红方式默认现金分红，您可以改为红利再投资，长期持有更合适。")
    else:
        text = (f"{name}近两年没有分红。对5年期投资来说影响不大，收益体现在净值增长里，"
                "如需现金流可以定期赎回一部分。")
    return ask(users[i % 2], text)


def _benchmark_turn(i: int):
    code, name, kind, *_ = FUNDS[i]
    ret = FUNDS[i][10]
    bench = ("中债综合财富指数", "沪深300指数收益率×95%+银行活期存款利率×5%", "中证科技100指数收益率×80%+中债综合指数×20%",
             "中债1-3年国开债指数", "中证红利低波动指数收益率×95%+活期利率×5%", "MSCI世界医疗保健指数（人民币计价）",
             "沪深300指数×50%+中债综合指数×50%", "中债综合全价指数")[i]
    excess = (0.41, 3.12, -2.35, 0.18, 0.66, -1.74, 1.09, 0.27)[i]
    users = [f"{code}跑赢基准了吗？", f"{name}的业绩比较基准是什么，近一年超额多少？"]
    return ask(
        users[(i + 1) % 2],
        f"{name}的业绩比较基准是“{bench}”。近一年基金收益{ret:.2f}%，相对基准"
        f"{'超额' if excess >= 0 else '落后'}{abs(excess):.2f}个百分点。",
    )


TOPICS = [_dividend_turn, _benchmark_turn, _fee_turn, _nav_turn, _drawdown_turn, _manager_turn, _size_turn, _redeem_turn, _holdings_turn, _sip_turn]


def _shortlist_walk():
    turns = []
    for i in range(len(FUNDS)):
        for t in range(len(TOPICS)):
            # Rotate the topic order per fund, as a person would jump around.
            turns.append(TOPICS[(t + i * 3) % len(TOPICS)](i))
    return turns


OPENING = [
    note("你是一名基金研究助手。只陈述可核实的数字，注明日期；不作收益承诺；用户更正信息时以最新说法为准。"),
    ask("你好，我想用一笔闲钱做基金配置，大概20万元，帮我理一下思路。",
        "好的。先确认三件事：这20万元多久内不会用到、能接受的最大亏损幅度、以及有没有已经持有的基金。"
        "有了这三点，我再按股债比例给您列候选。"),
    ask("钱三年内不用，亏损最多能接受15%左右，目前只有一些货币基金。",
        "明白：期限3年，最大可承受回撤约15%，现有持仓基本是现金类。按这个条件，股债比例建议在3:7到4:6之间，"
        "权益部分以宽基指数为主，债券部分用中短债和纯债打底。"),
    ask("先看看澄海稳健增利债券A的费用吧，代码017235。",
        "澄海稳健增利债券A（017235）：管理费0.30%/年，托管费0.10%/年，申购费0.60%（平台一折后0.06%），"
        "持有满30天赎回费为0。合计每年运作费用约0.40%，从净值中每日计提。",
        later="澄海稳健增利债券A（017235）：管理费0.30%/年，托管费0.08%/年（更正：此前写成0.10%，"
              "以2026年10月更新的招募说明书为准），申购费0.60%（平台一折后0.06%），"
              "持有满30天赎回费为0。合计每年运作费用约0.38%，从净值中每日计提。",
        later_key="after-compaction"),
    ask("这只债基去年收益怎么样？",
        "截至2026-11-20，017235近一年收益3.62%，同类排名前35%。成立以来最大回撤-1.84%，发生在2022年11月债市调整期间，"
        "约两个月修复。"),
    ask("抱歉，我刚才说错了，投资期限是5年，不是3年。",
        "收到，投资期限更正为5年（之前记录的3年作废）。期限拉长后，权益比例可以提高到50%左右，"
        "但您可承受回撤仍是15%，所以我建议权益不超过45%，其中宽基指数占大头。"),
    ask("5年的话，沪深300指数增强值得放吗？",
        "可以作为权益核心。指数增强基金在跟踪沪深300的基础上争取超额收益，5年期限足以熬过一轮完整的波动。"
        "但要注意它历史最大回撤接近25%，仓位需要控制，单只不超过总资产的20%。"),
    clarify("帮我把那只红利的也加进来。",
            "您说的“那只红利的”是指南屿红利低波ETF联接A（008163），还是之前聊到的另一只红利指数基金？请确认代码，我再加入候选。"),
    ask("是008163，南屿红利低波的联接A。",
        "好的，已把南屿红利低波ETF联接A（008163）加入候选。它的风格偏价值，和沪深300增强有一定重合，"
        "但股息率更高、波动更低，可以作为权益部分的稳定器。"),
    ask("候选名单现在有哪些？",
        "目前候选共4只：017235澄海稳健增利债券A、006481远岭沪深300指数增强A、008163南屿红利低波ETF联接A，"
        "以及您账户里已有的货币基金。债券部分还缺一只短久期品种。"),
    ask("短债就用青禾中短债C吧，014507。",
        "已加入014507青禾中短债C。C类不收申购费，但每年收0.30%销售服务费，持有超过一年的话A类通常更便宜。"
        "您期限5年，如果平台有A类份额，建议优先A类。"),
    ask("平台只有C类。另外再加两只：北辰科技创新混合和恒川全球医疗QDII，顺便把和泰纯债和松原均衡也看看。",
        "好的，候选扩到8只。北辰科技创新是偏股混合，行业集中度高；恒川全球医疗是QDII，有汇率和额度限制；"
        "和泰纯债是一年定开；松原均衡是平衡混合。下面我逐只把费用、净值、回撤、经理和规模过一遍。"),
]

COMPARISONS = [
    ask("两只债基017235和009876比，选哪只做底仓？",
        "两只都可以。017235随时可申赎，年费用0.40%，近一年3.62%；009876一年定开，年费用0.25%，近一年3.05%，"
        "但回撤更小（-0.92%）。需要流动性选017235，确定一年不用的部分放009876。"),
    ask("006481和008163重合度高吗？",
        "按2026年三季报，两只基金前十大持仓重合3只（长江电力、中国神华、招商银行），重合市值约占各自净值的9%。"
        "风格上一个偏成长一个偏价值，合在一起分散效果还可以。"),
    ask("QDII额度现在够吗？恒川医疗能买多少？",
        "恒川全球医疗QDII自2026年8月起限购，单日单账户申购上限1万元。您如果要配3万元，至少要分3个交易日买。"),
    ask("科技创新那只跌得太狠，还要继续看吗？",
        "北辰科技创新混合从高点回撤46.30%，目前净值0.7418仍低于面值。它适合能承受大波动的小仓位，"
        "我先保留在候选里，等您确认回撤承受度后再决定。"),
    ask("松原均衡算股票还是债券？",
        "松原均衡配置混合（010318）股票仓位长期在45%至60%之间，其余是债券和现金，按风险算应归为权益类，"
        "在组合里我会按一半权益、一半债券来折算。"),
]

CLOSING = [
    ask("我之前说能接受15%回撤，这句先不算了，我回去想想再告诉你。",
        "好的，“最大可承受回撤15%”这条先撤回，不作为配置约束。在您重新确认之前，我只按5年期限比较各只基金，"
        "不给出具体仓位比例。"),
    ask("想好了，回撤能接受20%，但单只基金不能亏超过30%。",
        "已记录新的约束：组合最大回撤20%，单只基金最大回撤不超过30%。按这个标准，北辰科技创新混合（-46.30%）"
        "和恒川全球医疗QDII（-31.80%）超出单只上限，建议从候选中移除。"),
    ask("那就把这两只删掉，剩下的给个比例。",
        "删除011092和005599后，建议比例：006481远岭沪深300增强 20%，008163南屿红利低波 20%，010318松原均衡 10%，"
        "017235澄海债券 25%，009876和泰纯债 15%，014507青禾中短债 10%。权益约45%，预估历史最大回撤在16%至19%之间。"),
    ask("20万按这个比例，各买多少钱？",
        "按20万元：006481买4万元，008163买4万元，010318买2万元，017235买5万元，009876买3万元，014507买2万元。"
        "和泰纯债是定开基金，只能在开放期申购，下一次开放是2027年7月1日，在此之前这3万元可以先放在青禾中短债。"),
    ask("权益部分一次性买还是分批？",
        "建议权益部分10万元分6个月定投，每月约1.67万元，从2026年12月开始；债券部分可以一次性买入。"
        "这样能摊薄入场时点的风险。"),
    ask("不对，我不想定投，太麻烦了。取消定投这个方案。",
        "好的，取消分6个月定投的方案。改为分两次买入：2026年12月1日买入一半（5万元），2027年1月4日买入另一半。"
        "债券部分仍一次性买入。"),
    tool("帮我看看现在这个组合过去一年的模拟收益。",
         [Call("backtest_portfolio", {"weights": {"006481": 0.2, "008163": 0.2, "010318": 0.1, "017235": 0.25,
                                                  "009876": 0.15, "014507": 0.1},
                                      "from": "2025-11-20", "to": "2026-11-20"},
               '{"return_pct": 6.84, "max_drawdown_pct": -7.12, "volatility_pct": 6.3}')],
         "按目前比例回测2025-11-20至2026-11-20：组合收益6.84%，期间最大回撤-7.12%，年化波动6.3%。"
         "回测只说明过去，不代表未来收益。"),
    ask("每年要再平衡吗？",
        "建议每年再平衡一次，或任一资产偏离目标比例超过5个百分点时再平衡。比如权益从45%涨到51%，就卖出多出的部分买入债券。"
        "第一次检查日可以定在2027年6月30日。"),
    ask("好的，最后帮我总结一下今天定下来的事情。",
        "今天确定的：1）投资期限5年（已更正，原来说的3年作废）；2）组合最大回撤20%、单只不超过30%（15%的说法已撤回）；"
        "3）删除011092和005599；4）六只基金比例20/20/10/25/15/10；5）不定投，12月1日和1月4日分两次买入权益；"
        "6）每年再平衡，首次检查2027年6月30日。"),
]


def conversation() -> Conversation:
    return Conversation(
        scope="fund-research",
        id="cn-fund-research",
        title="基金研究：20万元五年期配置",
        language="zh",
        start=datetime(2026, 11, 21, 1, 30, tzinfo=timezone.utc),
        turns=OPENING + _shortlist_walk() + COMPARISONS + CLOSING,
        metadata={"channel": "app", "customer_segment": "retail"},
    )
