"""Short texts in scripts written without spaces between words (Chinese, Japanese, Thai), for
the sentence-splitting, MixPR and token-count tests."""

ZH = (
    "长城是中国古代的军事防御工程，全长两万多公里。它始建于春秋战国时期，明朝时大规模重修。\n"
    "大熊猫是中国特有的哺乳动物，主要生活在四川、陕西和甘肃的山区。大熊猫的食物几乎全部是竹子，"
    "每天要吃十几公斤的竹叶和竹笋！它们每天有一半以上的时间在进食。\n"
    "黄河是中国第二长的河流，被称为中华民族的母亲河。黄河中游流经黄土高原，因此河水含沙量很大。"
    "你知道黄河有多长吗？黄河全长约五千四百六十四公里。\n"
    "茶起源于中国，已有几千年的历史。绿茶、红茶和乌龙茶是最常见的种类；喝茶是日常生活的一部分。"
)

JA = (
    "富士山は日本で一番高い山で、標高は三千七百七十六メートルです。山頂からの日の出はとても美しいです。\n"
    "寿司は酢飯と魚を組み合わせた日本の伝統的な料理です。回転寿司では、皿がベルトコンベアで運ばれてきます！"
    "東京には多くの有名な寿司屋があります。\n"
    "桜の花は春に咲き、多くの人が花見を楽しみます。「きれいですね」と友達が言いました。"
    "京都の寺では、秋になると紅葉が見られます。\n"
    "新幹線は東京と大阪を約二時間半で結んでいます。駅で弁当を買って、電車の中で食べました。"
)

TH = (
    "ประเทศไทยตั้งอยู่ในภูมิภาคเอเชียตะวันออกเฉียงใต้ กรุงเทพมหานครเป็นเมืองหลวงของประเทศ "
    "ช้างเป็นสัตว์ประจำชาติของไทย ช้างไทยกินหญ้าและผลไม้เป็นอาหาร\n"
    "อาหารไทยมีชื่อเสียงไปทั่วโลก ต้มยำกุ้งเป็นอาหารที่มีรสเปรี้ยวและเผ็ด "
    "ส้มตำทำจากมะละกอดิบ\n"
    "แม่น้ำเจ้าพระยาไหลผ่านกรุงเทพมหานคร เรือหลายลำแล่นอยู่ในแม่น้ำทุกวัน"
)

# Short paragraphs in other languages (token-count tests: SmolLM2's tokenizer, trained mostly on
# English, cuts these into many more tokens per word than English).
LANGS = {
    "cs": "Příliš žluťoučký kůň úpěl ďábelské ódy. Praha je hlavní město České republiky a leží "
    "na řece Vltavě. Ve středověku byla sídlem českých králů a římských císařů.",
    "pl": "Zażółć gęślą jaźń. Warszawa jest stolicą Polski i największym miastem kraju. Przez "
    "miasto przepływa Wisła, najdłuższa rzeka w Polsce.",
    "fi": "Suomi on tasavalta Pohjois-Euroopassa. Helsingissä asuu noin kuusisataatuhatta "
    "ihmistä, ja kaupungin edustalla on Suomenlinnan merilinnoitus. Talvisin järvet jäätyvät.",
    "sw": "Kiswahili ni lugha ya Kibantu inayozungumzwa na mamilioni ya watu katika Afrika "
    "Mashariki. Watoto walikuwa wanacheza mpira uwanjani baada ya kumaliza masomo yao.",
    "id": "Indonesia adalah negara kepulauan terbesar di dunia. Pemerintah mengatakan bahwa "
    "pembangunan jalan tol akan diselesaikan sebelum akhir tahun depan.",
    "de": "Die Donaudampfschifffahrtsgesellschaft wurde im neunzehnten Jahrhundert gegründet. "
    "Bundesverfassungsgericht und Rechtsschutzversicherungsgesellschaften sind lange Wörter.",
    "he": "ירושלים היא בירת ישראל והעיר הגדולה ביותר במדינה. העיר העתיקה מוקפת חומה ובה "
    "אתרים קדושים לשלוש הדתות.",
    "ar": "القاهرة هي عاصمة جمهورية مصر العربية وأكبر مدنها. يمر نهر النيل عبر المدينة، "
    "وتقع الأهرامات على مقربة منها في الجيزة.",
    "ru": "Москва — столица России и крупнейший город страны. Через город протекает река "
    "Москва, а в центре находятся Кремль и Красная площадь.",
    "uk": "Київ — столиця України, одне з найстаріших міст Європи. Місто розташоване на "
    "берегах Дніпра.",
    "el": "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας. Η Ακρόπολη και ο Παρθενώνας βρίσκονται στο "
    "κέντρο της πόλης.",
    "hi": "नई दिल्ली भारत की राजधानी है। यमुना नदी शहर के पास बहती है और लाल किला यहाँ का एक "
    "प्रसिद्ध स्मारक है।",
    "bn": "ঢাকা বাংলাদেশের রাজধানী এবং বৃহত্তম শহর। বুড়িগঙ্গা নদী শহরের পাশ দিয়ে বয়ে গেছে।",
    "ta": "சென்னை தமிழ்நாட்டின் தலைநகரம் ஆகும். இது வங்காள விரிகுடாவின் கரையில் அமைந்துள்ளது.",
    "tr": "Türkiye'nin başkenti Ankara'dır, en kalabalık şehri ise İstanbul'dur. "
    "Çekoslovakyalılaştıramadıklarımızdan mısınız?",
    "hu": "Budapest Magyarország fővárosa, a Duna két partján fekszik. "
    "Megszentségteleníthetetlenségeskedéseitekért.",
    "vi": "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam. Thành phố nằm bên bờ "
    "sông Hồng và có nhiều hồ nước đẹp.",
    "ko": "서울은 대한민국의 수도이자 최대 도시이다. 한강이 도시를 가로질러 흐르며, 경복궁은 "
    "조선 시대의 대표적인 궁궐이다.",
    "ka": "თბილისი საქართველოს დედაქალაქი და უდიდესი ქალაქია. ქალაქში მდინარე მტკვარი მიედინება.",
    "hy": "Երևանը Հայաստանի մայրաքաղաքն է և ամենամեծ քաղաքը։ Քաղաքից երևում է Արարատ լեռը։",
    "am": "አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት። ከተማዋ በእንጦጦ ተራራ ግርጌ ትገኛለች።",
    "fr": "Le garçon a mangé une crème brûlée au café près de la cathédrale Notre-Dame. "
    "C'était délicieux, n'est-ce pas ?",
    "pt": "A população de São Paulo é a maior do Brasil. Não há nada mais bonito que o pôr do "
    "sol na praia, disse ele à irmã.",
    "es": "El niño comió paella en la plaza mayor de Madrid. ¿Dónde está la estación de "
    "ferrocarril? ¡Qué día tan hermoso!",
}
