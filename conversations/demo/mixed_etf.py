"""中英混合 — a bilingual (Chinese/English) ETF research conversation.

An engineer who works in Singapore and writes in a mix of Chinese and
English asks about US-listed and Hong Kong-listed ETFs, withholding tax and
currency. The holding period is corrected (18 months → 10 years), a plan to
buy through a QDII fund is withdrawn, and the assistant looks fund data up
through a tool. The ETF walk is composed from the table below.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, note, tool

# Ticker, exchange, name, expense ratio %, domicile, dividend withholding for a
# non-US investor, AUM (USD bn), distribution.
ETFS = [
    ("VWRA", "LSE", "Vanguard FTSE All-World UCITS (Acc)", 0.22, "Ireland", "15% on US dividends at fund level", 15.8, "accumulating"),
    ("CSPX", "LSE", "iShares Core S&P 500 UCITS (Acc)", 0.07, "Ireland", "15% on US dividends at fund level", 98.4, "accumulating"),
    ("VT", "NYSE Arca", "Vanguard Total World Stock", 0.06, "United States", "30% on distributions", 41.2, "quarterly dividends"),
    ("2800", "HKEX", "Tracker Fund of Hong Kong", 0.07, "Hong Kong", "none on HK distributions", 19.6, "semi-annual dividends"),
    ("3010", "HKEX", "iShares Core MSCI Asia ex Japan", 0.28, "Hong Kong", "varies by underlying market", 0.9, "accumulating"),
    ("IWDA", "LSE", "iShares Core MSCI World UCITS (Acc)", 0.20, "Ireland", "15% on US dividends at fund level", 90.3, "accumulating"),
    ("ES3", "SGX", "SPDR Straits Times Index ETF", 0.30, "Singapore", "none on Singapore dividends", 1.3, "semi-annual dividends"),
    ("VUAA", "LSE", "Vanguard S&P 500 UCITS (Acc)", 0.07, "Ireland", "15% on US dividends at fund level", 20.7, "accumulating"),
    ("IGLA", "LSE", "iShares Global Govt Bond UCITS (Acc, USD hedged)", 0.20, "Ireland", "none on bond interest", 3.1, "accumulating"),
]


def _etf_turns(e):
    ticker, exchange, name, ter, domicile, wht, aum, dist = e
    i = ETFS.index(e)
    cost = 100000 * ter / 100
    return [
        tool(
            [f"{ticker} 的 expense ratio 多少？", f"帮我 check 一下 {ticker}.", f"{ticker} 这个 ETF 怎么样？"][i % 3],
            [Call("etf_profile", {"ticker": ticker, "exchange": exchange},
                  json.dumps({"name": name, "ter": ter, "domicile": domicile, "aum_usd_bn": aum, "distribution": dist}))],
            f"{ticker}（{exchange}）: {name}. Expense ratio {ter:.2f}%/年，注册地 {domicile}，规模约 USD {aum:.1f} bn，"
            f"{dist}. 按 USD 100,000 持有，每年费用约 USD {cost:,.0f}。",
        ),
        ask([f"{ticker} 的 dividend withholding tax 怎么算？", f"持有 {ticker} 要交多少预扣税？"][i % 2],
            f"For {ticker} (domiciled in {domicile}): {wht}. 你是新加坡税务居民，新加坡不对境外股息另行征税，"
            f"所以这部分就是你的全部税负。"),
        ask([f"{ticker} 有遗产税风险吗？", f"If something happens to me, {ticker} 会被美国征 estate tax 吗？"][i % 2],
            ("会。美国注册的 ETF 属于 US situs assets，非美国人超过 USD 60,000 的部分可能被征最高40%的 estate tax。"
             if domicile == "United States" else
             f"不会。{ticker} 注册在 {domicile}，不属于 US situs assets，没有美国遗产税问题。")),
    ]


OPENING = [
    note("You are an investment research assistant. Answer in the user's mix of Chinese and English. "
         "Facts and figures only; no personal advice on what to buy."),
    ask("Hi，我在新加坡工作，想每月投 SGD 3,000 买 ETF，holding period 大概 18 个月。",
        "明白：每月 SGD 3,000，持有约18个月。18个月对股票 ETF 来说偏短，回撤可能在卖出时还没恢复；"
        "如果这笔钱18个月后要用，bond ETF 或定期存款更合适。"),
    ask("Sorry 我写错了，是 10 years，不是 18 months。",
        "收到，holding period 更正为10年（18个月作废）。10年期限可以以全球股票 ETF 为主，股债比例例如 80/20。"),
    ask("我应该买 US-listed 还是 Ireland-domiciled 的？",
        "For a non-US investor living in Singapore, Ireland-domiciled UCITS ETFs usually win: 股息预扣税 15% 而不是 30%，"
        "and no US estate tax exposure above USD 60,000. 缺点是费率略高、在 LSE 交易。"),
    ask("我原本想通过国内的 QDII 基金买标普500，这个方案怎么样？",
        "QDII 可以，但有三点：1) 额度经常限购，单日可能只有 RMB 1,000；2) 费率一般 0.8%–1.2%/年，比 CSPX 的 0.07% 高很多；"
        "3) 你的工资是 SGD，换成人民币再出境多一层换汇成本。"),
    ask("算了，QDII 那个方案不考虑了，当我没提。",
        "OK，QDII 方案撤回，不再比较。下面只看 LSE 和 HKEX 上的 ETF。"),
    ask("Which broker 在新加坡可以买 LSE 的 ETF？",
        "Interactive Brokers、Saxo 和 Tiger 都可以买 LSE 上市的 UCITS ETF。IBKR 佣金最低（约 USD 1.7–GBP 3/笔），"
        "Saxo 有 custody fee 按资产收，Tiger 对 LSE 的支持比较新。"),
]

CLOSING = [
    ask("如果 80/20，我的组合用哪几个？",
        "一个简单的 80/20 例子（facts only）：VWRA 70% + 3010 10% 作股票部分，IGLA 20% 作债券部分。"
        "加权费率约 0.22×0.7 + 0.28×0.1 + 0.20×0.2 = 0.222%/年。"),
    ask("每月 SGD 3,000 分三只会不会佣金太高？",
        "按 IBKR 每笔最低约 USD 1.7 计算，每月3笔约 USD 5.1，占 SGD 3,000 的约0.23%，一年下来比 ETF 费率还高。"
        "可以每月只买一只，轮流买，或每季度买一次。"),
    ask("Ok 那就每季度买一次，SGD 9,000 一次。",
        "好的：改为每季度一次 SGD 9,000，三只按 70/10/20 分配（6,300 / 900 / 1,800）。每季度佣金约 USD 5.1，占比约0.08%。"),
    ask("3010 只有 900 太少了，去掉吧，全放 VWRA。",
        "OK，去掉3010。新比例 VWRA 80% + IGLA 20%，每季度 SGD 7,200 / 1,800。VWRA 已经包含约10%的亚洲（除日本）市场。"),
    ask("SGD 换 USD 哪里便宜？",
        "IBKR 的换汇按市场中间价加约 0.002%，最低 USD 2/笔，比银行柜台的约 0.5%–1% 点差便宜很多。"),
    ask("帮我总结一下今天的结论。",
        "Summary: 1) 期限10年（已从18个月更正）；2) 不用 QDII（方案已撤回）；3) 用 Ireland-domiciled UCITS ETF，避免30%预扣税和美国遗产税；"
        "4) 组合 VWRA 80% + IGLA 20%，3010 已去掉；5) 每季度投 SGD 9,000，在 IBKR 换汇。"),
]

MIDDLE = [
    ask("VWRA 和 VT 到底差在哪？", "Same index family (FTSE All-World vs CRSP-like total world), 差别主要在注册地：VT 在美国，"
        "股息预扣30%并有遗产税风险；VWRA 在爱尔兰，15%，无遗产税。VT 费率 0.06% 更低，但税差每年约 0.3% 吃掉了优势。"),
    ask("Accumulating 和 distributing 怎么选？", "新加坡没有资本利得税，也不对境外股息征税，accumulating 省去再投资的麻烦和佣金，"
        "10年期限通常选 Acc。"),
    ask("汇率风险呢？我的支出都是 SGD。", "股票部分不对冲是常见做法，长期看货币波动对股票回报影响较小；债券部分建议对冲，"
        "所以 IGLA 选的是 USD hedged 份额。SGD hedged 的全球债券 ETF 选择很少。"),
    ask("VWRA 的 tracking difference 怎样？", "2023 至 2025 年 VWRA 每年的 tracking difference 约 −0.05% 到 +0.10%，"
        "比费率 0.22% 好，因为证券借贷收入和爱尔兰的税务安排抵消了一部分成本。"),
]


def conversation() -> Conversation:
    walk = [t for e in ETFS for t in _etf_turns(e)]
    return Conversation(
        scope="fund-research",
        id="mixed-etf-singapore",
        title="ETF research (中英混合): Singapore-based investor",
        language="zh-en",
        start=datetime(2026, 11, 18, 13, 20, tzinfo=timezone.utc),
        turns=OPENING + walk[:9] + MIDDLE + walk[9:] + CLOSING,
        metadata={"channel": "web", "residence": "SG"},
    )
