"""耳机寄修 — a long Chinese repair conversation for the rolling hand-off policy.

Written for this project in the spirit of seed 001's regression (an AirPods
repair told over 126 user turns), as material for hand-off notes and their
drift checks (SPEC §7, §8). A customer's left AirPods Pro 3 earbud goes
silent; the assistant troubleshoots, looks the order up (order 88232, its
delivery date and its warranty end come back from tools and are restated by
the assistant many times, but the user never says them); the customer
considers an AirPods Max and drops it ("先不买新的了"), drops AppleCare+,
buys an iPad for their mother under conditions ("预算4000以内", "只要银色
或者深空灰", later restated for the case), has a Genius Bar booking fail,
gives a consent at turn 80 ("我明确同意办理") and withdraws it at turn 82
("算了，申请还是先别提交…"), restating the hold twice more. From turn 83 on
the customer only asks questions about shipping, prices and progress.

Every turn is a completed run, so pair *i* is user turn *i + 1*. Tool
results are JSON with an ``ok`` flag; the assistant asks once for the
serial number, which the user never provides. Scope ``device-repair``; not
registered in the demo loader yet (the rolling policy loads it).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, tool

ORDER = "88232"
DELIVERED = "2026-08-31"
WARRANTY_UNTIL = "2027-08-31"
IPAD_ORDER = "SO-20260915-3307"


def _json(**fields) -> str:
    return json.dumps(fields, ensure_ascii=False)


TROUBLESHOOTING = [  # turns 1–14
    tool("你好，我上个月在你们店买的AirPods Pro 3，左耳突然没声音了，右耳正常。订单号是88232。",
         [Call("lookup_order", {"order": ORDER},
               _json(ok=True, order=ORDER, product="AirPods Pro 3", delivered_at=DELIVERED, status="已签收"))],
         f"查到了：订单{ORDER}，AirPods Pro 3，{DELIVERED}签收。左耳无声我们先排查一下：请把两只耳机放回充电盒，"
         "盖上盖子等30秒再取出。"),
    ask("放回去等了30秒，左耳还是没声音。",
        "好的。请在iPhone的设置-辅助功能-音频/视觉里看一下左右声道平衡，滑块是否在正中间。"),
    ask("平衡是在中间的。",
        "那我们试试清洁：用干燥的软毛刷轻刷左耳的出音网罩，不要用水或酒精。"),
    ask("刷过了，还是不行。是不是进水了？",
        "有可能，但AirPods Pro 3有IP54级防尘防水，日常出汗一般不会导致完全无声。可以做一次远程诊断确认。"),
    tool("那你帮我诊断一下吧。",
         [Call("run_diagnostics", {"order": ORDER},
               _json(ok=True, left="无音频输出", right="正常", firmware="8A356", battery_left="82%"))],
         "诊断结果：左耳无音频输出，右耳正常，固件8A356，左耳电量82%。可以排除没电的问题。"),
    ask("固件需要升级吗？", "8A356已经是最新版本，不需要升级。"),
    ask("那重置一下能好吗？",
        "可以试试：打开盒盖，按住背面按钮15秒，直到指示灯闪橙色再闪白色，然后重新配对。"),
    ask("重置了，重新连上了，左耳还是没声。", "那基本可以判断是左耳硬件故障，需要维修或者更换。"),
    tool("还在保修吗？",
         [Call("check_warranty", {"order": ORDER},
               _json(ok=True, order=ORDER, warranty="在保", warranty_until=WARRANTY_UNTIL))],
         f"在保：订单{ORDER}的保修至{WARRANTY_UNTIL}，左耳硬件故障属于保修范围，免费维修。"),
    ask("修的话要多久？", "寄修一般7到10个工作日；去天才吧检测，如果当场有备件，可以当天更换。"),
    tool("AirPods Max现在多少钱？是不是太重了？",
         [Call("check_stock", {"sku": "AirPods Max"}, _json(ok=True, sku="AirPods Max", stock="有货", price=3999))],
         "AirPods Max目前有货，售价3999元，重量约385克，比Pro 3重很多，长时间戴可能压头。"),
    ask("先不买新的了，还是先修这副吧。", "好的，那我们先安排维修。您可以选择去天才吧，或者直接寄回本店。"),
    ask("天才吧要预约吗？", "需要预约，我可以帮您查最近门店的空位。"),
    tool("有没有离我近一点的天才吧？我在徐汇。",
         [Call("find_genius_bar", {"district": "徐汇"},
               _json(ok=True, store="Apple 环贸iapm", next_slot="2026-09-12 14:30"))],
         "离徐汇最近的是Apple 环贸iapm，最近可约的时间是9月12日14:30。"),
]

WAITING = [  # turns 15–28
    ask("9月12号我可能没空，还有别的时间吗？", "环贸iapm 9月13日10:00和9月14日16:00也有空位。"),
    ask("去天才吧要带什么？", f"带上耳机和充电盒，以及购买凭证（订单{ORDER}的电子发票即可）。"),
    ask("电子发票在哪里下载？", "在订单详情页点“发票”即可下载PDF。"),
    ask("诊断结果我自己能看到吗？", "可以，诊断报告在App的“我的设备”页面里。"),
    ask("左耳现在完全不能用，通话的时候只能用右耳吗？", "是的，可以单独用右耳，在设置里把麦克风改成“始终右耳”。"),
    ask("麦克风怎么改？", "设置-蓝牙-点AirPods旁边的i-麦克风-选择“始终右耳AirPods”。"),
    ask("登记维修需要我做什么？", "为了登记维修，请提供设备序列号，在设置-通用-关于本机-AirPods里可以看到。"),
    ask("序列号在哪里看来着？", "在iPhone上：设置-通用-关于本机-AirPods，是一串12位的字母和数字；充电盒盖子内侧也印着。"),
    ask("充电盒里那串字太小了，看不清。", "可以用手机相机拍下来放大看。"),
    ask("维修期间有没有备用机可以借？", "寄修不提供备用机；天才吧一般也没有备用耳机。"),
    tool("如果不在保修了要多少钱？",
         [Call("estimate_repair_cost", {"order": ORDER, "part": "左耳"},
               _json(ok=True, in_warranty_fee=0, out_of_warranty_fee=749))],
         "您在保，免费。过保的话左耳单只维修费是749元。"),
    ask("右耳以后也坏了怎么办？", f"在保修期内（至{WARRANTY_UNTIL}）都可以免费修；过保后单只749元。"),
    ask("AppleCare+还能买吗？", "AppleCare+需要在购买后60天内加购，您是8月31日签收的，现在还在期限内，价格199元。"),
    ask("AppleCare+就不买了。", "好的，不加购AppleCare+。"),
]

IPAD = [  # turns 29–42
    ask("另外我想给我妈买个iPad，她主要看视频和视频通话。",
        "好的。看视频和视频通话的话，iPad（第11代）或者iPad mini都够用。您有预算吗？"),
    ask("预算4000以内，只要银色或者深空灰，别的颜色她不喜欢。",
        "明白：预算4000以内，只要银色或者深空灰。符合的有两款：iPad（第11代）128GB银色2999元；"
        "iPad mini 128GB深空灰3999元。iPad Air起价4799元，超出预算。"),
    ask("iPad和iPad mini哪个更适合老人？", "屏幕大的更适合：iPad是11英寸，mini是8.3英寸。看视频和视频通话我推荐iPad（第11代）。"),
    tool("第11代有银色的现货吗？",
         [Call("check_stock", {"sku": "iPad 第11代 128GB 银色"},
               _json(ok=True, sku="iPad 第11代 128GB 银色", stock="有货", price=2999))],
         "有货，2999元，今天下单明天发货。"),
    ask("128GB够用吗？", "看视频、视频通话、装几个常用App，128GB足够；要存很多电影可以选256GB，3749元，也在预算内。"),
    ask("要不要配键盘？", "看视频用不上键盘，配一个支架或者保护壳就好。"),
    ask("保护壳推荐哪种？", "智能双面夹299元，或者第三方带支架的保护壳，一百元左右。"),
    ask("我妈眼睛不太好，字能调大吗？", "可以，在设置-显示与亮度-文字大小里调，还可以打开“放大”功能。"),
    ask("能不能设置成简单模式？", "iPadOS有“辅助访问”模式，只保留几个大图标的App，适合老人。"),
    ask("视频通话用微信可以吗？", "可以，iPad版微信支持视频通话。"),
    tool("有没有以旧换新？她有个旧的iPad Air 2。",
         [Call("trade_in_quote", {"device": "iPad Air 2"}, _json(ok=True, device="iPad Air 2", quote=300))],
         "iPad Air 2以旧换新可以抵300元。"),
    ask("太少了，旧的我留着吧，不换了。", "好的，不做以旧换新。"),
    ask("iPad要激活吗？我妈不会弄。", "需要激活。收到后我可以一步步教您远程帮她设置。"),
    ask("激活要多久？", "大概15分钟。"),
]

ORDERING = [  # turns 43–56
    tool("就选第11代128GB银色的吧，帮我下单，寄到我妈家。",
         [Call("create_order", {"sku": "iPad 第11代 128GB 银色", "address_book": "妈妈"},
               _json(ok=True, order_id=IPAD_ORDER, status="created", price=2999, eta="2026-09-17"))],
         f"已下单：订单{IPAD_ORDER}，iPad（第11代）128GB银色，2999元，预计9月17日送达您妈妈家。"),
    ask("发票开公司抬头可以吗？", "可以，在订单详情里申请开具，填写公司名称和税号。"),
    tool("帮我约9月13号上午10点环贸的天才吧。",
         [Call("book_genius_bar", {"order": ORDER, "store": "Apple 环贸iapm", "slot": "2026-09-13 10:00"},
               _json(ok=False, error="该时段已被约满，预约失败"))],
         "抱歉，9月13日10:00这个时段刚被约满，预约没有成功。9月14日16:00还有空位，要不要改约这个时间？"),
    ask("14号下午我要上班，不行。", "明白，那暂时不预约。"),
    ask("天才吧周末人多吗？", "周末下午人比较多，建议约早上。"),
    tool("iPad什么时候发货？",
         [Call("track_order", {"order_id": IPAD_ORDER},
               _json(ok=True, order_id=IPAD_ORDER, status="已发货", carrier="顺丰", eta="2026-09-17"))],
         "已经发货了，顺丰，预计9月17日送达。"),
    ask("我妈不在家能代收吗？", "可以放驿站或者让邻居代收，顺丰会先打电话。"),
    ask("iPad的保修是多久？", "一年有限保修，60天内可以加购AppleCare+。"),
    ask("AirPods左耳要是寄修的话，包装有要求吗？", "建议用原包装盒；没有的话用硬纸盒加气泡膜，充电盒也要一起寄。"),
    ask("原包装我好像扔了。", "没关系，用硬纸盒和气泡膜包好就行。"),
    ask("寄修的邮费谁出？", "在保寄修邮费由我们承担，顺丰到付。"),
    ask("寄回来的时候会是新的吗？", "如果左耳无法修复，会直接换一只新的左耳。"),
    ask("换的那只和右耳音质会不一样吗？", "不会，换的是同型号同固件的新耳机，会自动配对。"),
    ask("好的，我再想想是去天才吧还是寄修。", "好的，您决定了告诉我。"),
]

AFTER_DELIVERY = [  # turns 57–68
    ask("iPad到了，我妈很喜欢。", "太好了！需要的话我可以教您怎么设置。"),
    ask("激活的时候要Apple ID，她没有怎么办？", "可以在激活时新建一个，或者用家人共享把她加到您的家庭组。"),
    ask("家人共享怎么设置？", "在您的iPhone上：设置-您的名字-家人共享-添加成员。"),
    ask("我的AirPods左耳能不能先用着，等有空再修？", f"可以，右耳单独使用不受影响；保修到{WARRANTY_UNTIL}，不用着急。"),
    ask("保修期是从拿到耳机那天算吗？", "是的，从8月31日签收当天开始算一年。"),
    ask("那就是还有将近一年的保修对吧？", "对，还有将近一年。"),
    ask("左耳没声音会不会影响右耳？", "不会，两只是独立工作的。"),
    ask("降噪模式下左耳也完全没声音，正常吗？", "正常，左耳没有音频输出，降噪也不会工作。"),
    ask("那我先用右耳，下个月再决定怎么修。", "好的，有需要随时找我。"),
    ask("对了，iPad的保护壳也只要银色或者深空灰的。", "明白，保护壳也只看银色或者深空灰。"),
    ask("能开发票给我妈的名字吗？", "可以，开票抬头填个人姓名即可。"),
    ask("好的，谢谢。", "不客气。"),
]

CHOOSING = [  # turns 69–79: questions only
    ask("天才吧检测要收费吗？", "在保检测免费。"),
    ask("寄修和天才吧哪个快？", "天才吧有备件的话当天换；寄修7到10个工作日。"),
    ask("寄修能不能加急？", "不能加急，但可以随时查询进度。"),
    ask("寄修的时候要不要把耳机从手机上移除？", "需要，在设置-蓝牙里“忽略此设备”，并关闭“查找”。"),
    ask("关闭查找会不会丢？", "寄修期间关闭查找是必须的，物流全程保价。"),
    ask("保价是多少？", "按商品价值保价，AirPods Pro 3按1899元保价。"),
    ask("维修进度在哪里查？", f"寄出后在“服务-维修进度”里输入订单号{ORDER}就能看到。"),
    ask("修好了会短信通知吗？", "会，寄回时会收到带顺丰单号的短信。"),
    ask("寄修要填什么单子？", "提交送修申请时会自动生成维修单，不用手写。"),
    ask("送修申请怎么提交？", "我可以帮您直接提交，您在确认卡上确认就行。"),
    ask("提交之前还要我做什么吗？", "把耳机和充电盒包好，关闭查找就行。"),
]

CONSENT_AND_HOLD = [  # turns 80–90
    tool("想了想，天才吧那边我不去了，直接寄回你们店修吧。现在可以提交送修申请了，我明确同意办理。",
         [Call("submit_ticket", {"order": ORDER, "type": "寄修", "part": "左耳"},
               _json(ok=False, error="用户在确认卡上点了拒绝，申请未提交"))],
         "确认卡显示您点了拒绝，申请没有提交。需要的话我可以再发起一次。"),
    ask("刚才手滑了。寄修大概几天能寄回来？", "一般7到10个工作日。"),
    ask("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的，申请先不提交，等您准备好包装再告诉我。"),
    ask("包装用快递袋行吗？", "不建议，快递袋挤压容易损坏，最好用硬纸盒。"),
    ask("硬纸盒多大合适？", "15×10×8厘米左右就够，里面塞满气泡膜。"),
    ask("充电线要一起寄吗？", "不用，只寄耳机和充电盒。"),
    ask("耳塞套要寄吗？", "左耳的耳塞套一起寄，方便检测。"),
    ask("寄之前要充满电吗？", "不用，有一点电就行。"),
    ask("顺丰上门取件要预约吗？", "提交申请后系统会自动预约上门取件。"),
    ask("取件时间可以选吗？", "可以选第二天的上午或下午。"),
    ask("寄修期间能用别的耳机吗？", "可以，临时用有线耳机或者其他蓝牙耳机都行。"),
]

REPAIR_QUESTIONS = [  # turns 91–101
    ask("送修期间有没有替代耳机可以先用？", "寄修不提供替代耳机。"),
    tool("你们店有卖便宜点的蓝牙耳机吗？",
         [Call("check_stock", {"sku": "Beats Solo Buds"},
               _json(ok=True, sku="Beats Solo Buds", stock="有货", price=599))],
         "Beats Solo Buds有货，599元。"),
    ask("不在保的话修一只多少钱？", f"749元；您的订单{ORDER}于{DELIVERED}签收，保修至{WARRANTY_UNTIL}，在保免费。"),
    ask("维修价格会涨吗？", "价格按官方标准，近期没有调整。"),
    ask("申请先别提交，包装还没准备好。", "好的，不提交。"),
    ask("寄修的进度能在App里看吗？", "可以，在“服务-维修进度”里。"),
    ask("进度会显示到哪一步？", "已收件、检测中、维修中、已寄回四步。"),
    ask("检测要多久？", "收件后1到2个工作日。"),
    ask("检测发现人为损坏怎么办？", "会先联系您报价，您同意后才维修。"),
    ask("人为损坏一般收多少？", "同过保价格，单只749元。"),
    ask("会不会检测不出问题又寄回来？", "诊断已确认左耳无输出，一般不会。"),
]

SHIPPING_QUESTIONS = [  # turns 102–114
    ask("寄修的顺丰是次日达吗？", "上海同城一般次日达。"),
    ask("寄出后多久能收到检测结果？", "1到2个工作日。"),
    ask("修好寄回来是寄到哪里？", "寄到您申请时填写的地址。"),
    ask("地址能改吗？", "提交申请前都能改。"),
    ask("可以寄到公司吗？", "可以，填公司地址即可。"),
    ask("公司前台能不能代签？", "可以，顺丰允许代签。"),
    ask("寄修的耳机会被清除配对吗？", "会，寄回后需要重新配对。"),
    ask("重新配对麻烦吗？", "打开盒盖靠近iPhone，点“连接”即可。"),
    ask("再说一次，申请先别提交，等我准备好了再说。", "明白，一直等您通知。"),
    ask("维修期间右耳能单独寄吗？", "只寄左耳也可以，但建议连同充电盒一起寄，方便检测配对。"),
    ask("充电盒寄走了右耳怎么充电？", "那右耳就没法充电了，建议右耳留着用完电为止。"),
    ask("那右耳也一起寄吧？", "可以一起寄，回来后一起配对。"),
    ask("一起寄的话会不会丢？", "全程保价，不会。"),
]

TAIL = [  # turns 115–126: the newest turns, kept raw
    ask("寄修要自己打印面单吗？", "不用，顺丰上门时带面单。"),
    ask("上门取件几点来？", "在您选的时间段内。"),
    ask("可以放门口吗？", "建议当面交给快递员。"),
    ask("寄修需要身份证吗？", "不需要。"),
    ask("维修记录会影响以后保修吗？", "不会。"),
    ask("换新的左耳保修怎么算？", "跟随原机保修，或者90天，以较长者为准。"),
    ask("那90天是从哪天算？", "从维修完成当天算。"),
    ask("维修好了能开发票吗？", "在保维修免费，不开发票，会有维修单。"),
    ask("iPad那边我妈说很好用，谢谢。", "不客气！"),
    ask("iPad的AppleCare+还能买吗？", "可以，60天内加购，iPad是329元。"),
    ask("我回头再决定。", "好的。"),
    ask("下周包装准备好我再来找你提交。", "好的，等您消息。"),
]

TURNS = (TROUBLESHOOTING + WAITING + IPAD + ORDERING + AFTER_DELIVERY + CHOOSING + CONSENT_AND_HOLD
         + REPAIR_QUESTIONS + SHIPPING_QUESTIONS + TAIL)


def conversation() -> Conversation:
    return Conversation(
        scope="device-repair",
        id="cn-airpods-repair",
        title="AirPods Pro 3左耳无声寄修",
        language="zh",
        start=datetime(2026, 9, 10, 9, 30, tzinfo=timezone.utc),
        turns=list(TURNS),
        metadata={"channel": "app", "policy": "rolling"},
    )
